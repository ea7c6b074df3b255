// Command reflection_v1_client asks a gRPC server for reflection over grpc.reflection.v1
// only, with grpc-go's own generated v1 client (no fallback to v1alpha), and prints what
// it learned as JSON. tests/daemon/test_reflection.py runs it against the daemon.
//
//	reflection_v1_client ADDRESS SYMBOL...
//
// It lists the services, then asks for the file that declares each SYMBOL.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

// File is one FileDescriptorProto of an answer, reduced to what the test checks.
type File struct {
	Name     string              `json:"name"`
	Package  string              `json:"package"`
	Services []string            `json:"services"`
	Messages map[string][]string `json:"messages"`
}

// Report is the program's output.
type Report struct {
	Services []string          `json:"services"`
	Files    map[string][]File `json:"files"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: reflection_v1_client ADDRESS SYMBOL...")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "reflection_v1_client:", err)
		os.Exit(1)
	}
}

func run(address string, symbols []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	stream, err := reflectionv1.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		return err
	}
	ask := func(request *reflectionv1.ServerReflectionRequest) (*reflectionv1.ServerReflectionResponse, error) {
		if err := stream.Send(request); err != nil {
			return nil, err
		}
		response, err := stream.Recv()
		if err != nil {
			return nil, err
		}
		if e := response.GetErrorResponse(); e != nil {
			return nil, fmt.Errorf("error response %d: %s", e.ErrorCode, e.ErrorMessage)
		}
		return response, nil
	}
	report := Report{Files: map[string][]File{}}
	listed, err := ask(&reflectionv1.ServerReflectionRequest{
		MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{ListServices: ""},
	})
	if err != nil {
		return fmt.Errorf("list_services: %w", err)
	}
	for _, service := range listed.GetListServicesResponse().GetService() {
		report.Services = append(report.Services, service.Name)
	}
	for _, symbol := range symbols {
		found, err := ask(&reflectionv1.ServerReflectionRequest{
			MessageRequest: &reflectionv1.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: symbol},
		})
		if err != nil {
			return fmt.Errorf("file_containing_symbol %s: %w", symbol, err)
		}
		for _, raw := range found.GetFileDescriptorResponse().GetFileDescriptorProto() {
			var file descriptorpb.FileDescriptorProto
			if err := proto.Unmarshal(raw, &file); err != nil {
				return fmt.Errorf("file_containing_symbol %s: %w", symbol, err)
			}
			report.Files[symbol] = append(report.Files[symbol], summarize(&file))
		}
	}
	if err := stream.CloseSend(); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(report)
}

// summarize keeps names, services and each message's fields as "name=number:type".
func summarize(file *descriptorpb.FileDescriptorProto) File {
	summary := File{Name: file.GetName(), Package: file.GetPackage(), Messages: map[string][]string{}}
	for _, service := range file.GetService() {
		summary.Services = append(summary.Services, service.GetName())
	}
	for _, message := range file.GetMessageType() {
		fields := []string{}
		for _, field := range message.GetField() {
			kind := field.GetType().String()
			if field.GetTypeName() != "" {
				kind = field.GetTypeName()
			}
			fields = append(fields, fmt.Sprintf("%s=%d:%s", field.GetName(), field.GetNumber(), kind))
		}
		summary.Messages[message.GetName()] = fields
	}
	return summary
}
