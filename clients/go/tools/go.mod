// The pinned protoc plugins that generate ../gen (see scripts/protogen/go.py).
// A module of its own so that the client's go.mod stays free of build tools.
module github.com/interrupt-sidecar/interrupt-sidecar/clients/go/tools

go 1.24.0

tool (
	google.golang.org/grpc/cmd/protoc-gen-go-grpc
	google.golang.org/protobuf/cmd/protoc-gen-go
)

require (
	google.golang.org/grpc/cmd/protoc-gen-go-grpc v1.6.1 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)
