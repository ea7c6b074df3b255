package interrupt.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * CoordinatorService is what an agent runtime uses: begin a turn or task, trip
 * it, end it, and watch what its tools do.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class CoordinatorServiceGrpc {

  private CoordinatorServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "interrupt.v1.CoordinatorService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<interrupt.v1.Interrupt.BeginExecutionRequest,
      interrupt.v1.Interrupt.BeginExecutionResponse> getBeginExecutionMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "BeginExecution",
      requestType = interrupt.v1.Interrupt.BeginExecutionRequest.class,
      responseType = interrupt.v1.Interrupt.BeginExecutionResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<interrupt.v1.Interrupt.BeginExecutionRequest,
      interrupt.v1.Interrupt.BeginExecutionResponse> getBeginExecutionMethod() {
    io.grpc.MethodDescriptor<interrupt.v1.Interrupt.BeginExecutionRequest, interrupt.v1.Interrupt.BeginExecutionResponse> getBeginExecutionMethod;
    if ((getBeginExecutionMethod = CoordinatorServiceGrpc.getBeginExecutionMethod) == null) {
      synchronized (CoordinatorServiceGrpc.class) {
        if ((getBeginExecutionMethod = CoordinatorServiceGrpc.getBeginExecutionMethod) == null) {
          CoordinatorServiceGrpc.getBeginExecutionMethod = getBeginExecutionMethod =
              io.grpc.MethodDescriptor.<interrupt.v1.Interrupt.BeginExecutionRequest, interrupt.v1.Interrupt.BeginExecutionResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "BeginExecution"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  interrupt.v1.Interrupt.BeginExecutionRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  interrupt.v1.Interrupt.BeginExecutionResponse.getDefaultInstance()))
              .setSchemaDescriptor(new CoordinatorServiceMethodDescriptorSupplier("BeginExecution"))
              .build();
        }
      }
    }
    return getBeginExecutionMethod;
  }

  private static volatile io.grpc.MethodDescriptor<interrupt.v1.Interrupt.InterruptRequest,
      interrupt.v1.Interrupt.InterruptResponse> getInterruptMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Interrupt",
      requestType = interrupt.v1.Interrupt.InterruptRequest.class,
      responseType = interrupt.v1.Interrupt.InterruptResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<interrupt.v1.Interrupt.InterruptRequest,
      interrupt.v1.Interrupt.InterruptResponse> getInterruptMethod() {
    io.grpc.MethodDescriptor<interrupt.v1.Interrupt.InterruptRequest, interrupt.v1.Interrupt.InterruptResponse> getInterruptMethod;
    if ((getInterruptMethod = CoordinatorServiceGrpc.getInterruptMethod) == null) {
      synchronized (CoordinatorServiceGrpc.class) {
        if ((getInterruptMethod = CoordinatorServiceGrpc.getInterruptMethod) == null) {
          CoordinatorServiceGrpc.getInterruptMethod = getInterruptMethod =
              io.grpc.MethodDescriptor.<interrupt.v1.Interrupt.InterruptRequest, interrupt.v1.Interrupt.InterruptResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Interrupt"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  interrupt.v1.Interrupt.InterruptRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  interrupt.v1.Interrupt.InterruptResponse.getDefaultInstance()))
              .setSchemaDescriptor(new CoordinatorServiceMethodDescriptorSupplier("Interrupt"))
              .build();
        }
      }
    }
    return getInterruptMethod;
  }

  private static volatile io.grpc.MethodDescriptor<interrupt.v1.Interrupt.EndExecutionRequest,
      interrupt.v1.Interrupt.EndExecutionResponse> getEndExecutionMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "EndExecution",
      requestType = interrupt.v1.Interrupt.EndExecutionRequest.class,
      responseType = interrupt.v1.Interrupt.EndExecutionResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<interrupt.v1.Interrupt.EndExecutionRequest,
      interrupt.v1.Interrupt.EndExecutionResponse> getEndExecutionMethod() {
    io.grpc.MethodDescriptor<interrupt.v1.Interrupt.EndExecutionRequest, interrupt.v1.Interrupt.EndExecutionResponse> getEndExecutionMethod;
    if ((getEndExecutionMethod = CoordinatorServiceGrpc.getEndExecutionMethod) == null) {
      synchronized (CoordinatorServiceGrpc.class) {
        if ((getEndExecutionMethod = CoordinatorServiceGrpc.getEndExecutionMethod) == null) {
          CoordinatorServiceGrpc.getEndExecutionMethod = getEndExecutionMethod =
              io.grpc.MethodDescriptor.<interrupt.v1.Interrupt.EndExecutionRequest, interrupt.v1.Interrupt.EndExecutionResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "EndExecution"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  interrupt.v1.Interrupt.EndExecutionRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  interrupt.v1.Interrupt.EndExecutionResponse.getDefaultInstance()))
              .setSchemaDescriptor(new CoordinatorServiceMethodDescriptorSupplier("EndExecution"))
              .build();
        }
      }
    }
    return getEndExecutionMethod;
  }

  private static volatile io.grpc.MethodDescriptor<interrupt.v1.Interrupt.KeepAliveRequest,
      interrupt.v1.Interrupt.KeepAliveResponse> getKeepAliveMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "KeepAlive",
      requestType = interrupt.v1.Interrupt.KeepAliveRequest.class,
      responseType = interrupt.v1.Interrupt.KeepAliveResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<interrupt.v1.Interrupt.KeepAliveRequest,
      interrupt.v1.Interrupt.KeepAliveResponse> getKeepAliveMethod() {
    io.grpc.MethodDescriptor<interrupt.v1.Interrupt.KeepAliveRequest, interrupt.v1.Interrupt.KeepAliveResponse> getKeepAliveMethod;
    if ((getKeepAliveMethod = CoordinatorServiceGrpc.getKeepAliveMethod) == null) {
      synchronized (CoordinatorServiceGrpc.class) {
        if ((getKeepAliveMethod = CoordinatorServiceGrpc.getKeepAliveMethod) == null) {
          CoordinatorServiceGrpc.getKeepAliveMethod = getKeepAliveMethod =
              io.grpc.MethodDescriptor.<interrupt.v1.Interrupt.KeepAliveRequest, interrupt.v1.Interrupt.KeepAliveResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "KeepAlive"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  interrupt.v1.Interrupt.KeepAliveRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  interrupt.v1.Interrupt.KeepAliveResponse.getDefaultInstance()))
              .setSchemaDescriptor(new CoordinatorServiceMethodDescriptorSupplier("KeepAlive"))
              .build();
        }
      }
    }
    return getKeepAliveMethod;
  }

  private static volatile io.grpc.MethodDescriptor<interrupt.v1.Interrupt.GetExecutionRequest,
      interrupt.v1.Interrupt.GetExecutionResponse> getGetExecutionMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetExecution",
      requestType = interrupt.v1.Interrupt.GetExecutionRequest.class,
      responseType = interrupt.v1.Interrupt.GetExecutionResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<interrupt.v1.Interrupt.GetExecutionRequest,
      interrupt.v1.Interrupt.GetExecutionResponse> getGetExecutionMethod() {
    io.grpc.MethodDescriptor<interrupt.v1.Interrupt.GetExecutionRequest, interrupt.v1.Interrupt.GetExecutionResponse> getGetExecutionMethod;
    if ((getGetExecutionMethod = CoordinatorServiceGrpc.getGetExecutionMethod) == null) {
      synchronized (CoordinatorServiceGrpc.class) {
        if ((getGetExecutionMethod = CoordinatorServiceGrpc.getGetExecutionMethod) == null) {
          CoordinatorServiceGrpc.getGetExecutionMethod = getGetExecutionMethod =
              io.grpc.MethodDescriptor.<interrupt.v1.Interrupt.GetExecutionRequest, interrupt.v1.Interrupt.GetExecutionResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetExecution"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  interrupt.v1.Interrupt.GetExecutionRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  interrupt.v1.Interrupt.GetExecutionResponse.getDefaultInstance()))
              .setSchemaDescriptor(new CoordinatorServiceMethodDescriptorSupplier("GetExecution"))
              .build();
        }
      }
    }
    return getGetExecutionMethod;
  }

  private static volatile io.grpc.MethodDescriptor<interrupt.v1.Interrupt.ListExecutionsRequest,
      interrupt.v1.Interrupt.ListExecutionsResponse> getListExecutionsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListExecutions",
      requestType = interrupt.v1.Interrupt.ListExecutionsRequest.class,
      responseType = interrupt.v1.Interrupt.ListExecutionsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<interrupt.v1.Interrupt.ListExecutionsRequest,
      interrupt.v1.Interrupt.ListExecutionsResponse> getListExecutionsMethod() {
    io.grpc.MethodDescriptor<interrupt.v1.Interrupt.ListExecutionsRequest, interrupt.v1.Interrupt.ListExecutionsResponse> getListExecutionsMethod;
    if ((getListExecutionsMethod = CoordinatorServiceGrpc.getListExecutionsMethod) == null) {
      synchronized (CoordinatorServiceGrpc.class) {
        if ((getListExecutionsMethod = CoordinatorServiceGrpc.getListExecutionsMethod) == null) {
          CoordinatorServiceGrpc.getListExecutionsMethod = getListExecutionsMethod =
              io.grpc.MethodDescriptor.<interrupt.v1.Interrupt.ListExecutionsRequest, interrupt.v1.Interrupt.ListExecutionsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListExecutions"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  interrupt.v1.Interrupt.ListExecutionsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  interrupt.v1.Interrupt.ListExecutionsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new CoordinatorServiceMethodDescriptorSupplier("ListExecutions"))
              .build();
        }
      }
    }
    return getListExecutionsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<interrupt.v1.Interrupt.WatchExecutionRequest,
      interrupt.v1.Interrupt.ExecutionEvent> getWatchExecutionMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "WatchExecution",
      requestType = interrupt.v1.Interrupt.WatchExecutionRequest.class,
      responseType = interrupt.v1.Interrupt.ExecutionEvent.class,
      methodType = io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
  public static io.grpc.MethodDescriptor<interrupt.v1.Interrupt.WatchExecutionRequest,
      interrupt.v1.Interrupt.ExecutionEvent> getWatchExecutionMethod() {
    io.grpc.MethodDescriptor<interrupt.v1.Interrupt.WatchExecutionRequest, interrupt.v1.Interrupt.ExecutionEvent> getWatchExecutionMethod;
    if ((getWatchExecutionMethod = CoordinatorServiceGrpc.getWatchExecutionMethod) == null) {
      synchronized (CoordinatorServiceGrpc.class) {
        if ((getWatchExecutionMethod = CoordinatorServiceGrpc.getWatchExecutionMethod) == null) {
          CoordinatorServiceGrpc.getWatchExecutionMethod = getWatchExecutionMethod =
              io.grpc.MethodDescriptor.<interrupt.v1.Interrupt.WatchExecutionRequest, interrupt.v1.Interrupt.ExecutionEvent>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "WatchExecution"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  interrupt.v1.Interrupt.WatchExecutionRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  interrupt.v1.Interrupt.ExecutionEvent.getDefaultInstance()))
              .setSchemaDescriptor(new CoordinatorServiceMethodDescriptorSupplier("WatchExecution"))
              .build();
        }
      }
    }
    return getWatchExecutionMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static CoordinatorServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<CoordinatorServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<CoordinatorServiceStub>() {
        @java.lang.Override
        public CoordinatorServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new CoordinatorServiceStub(channel, callOptions);
        }
      };
    return CoordinatorServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static CoordinatorServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<CoordinatorServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<CoordinatorServiceBlockingV2Stub>() {
        @java.lang.Override
        public CoordinatorServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new CoordinatorServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return CoordinatorServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static CoordinatorServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<CoordinatorServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<CoordinatorServiceBlockingStub>() {
        @java.lang.Override
        public CoordinatorServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new CoordinatorServiceBlockingStub(channel, callOptions);
        }
      };
    return CoordinatorServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static CoordinatorServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<CoordinatorServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<CoordinatorServiceFutureStub>() {
        @java.lang.Override
        public CoordinatorServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new CoordinatorServiceFutureStub(channel, callOptions);
        }
      };
    return CoordinatorServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * CoordinatorService is what an agent runtime uses: begin a turn or task, trip
   * it, end it, and watch what its tools do.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * Creates an execution with a fresh, untripped signal.
     * </pre>
     */
    default void beginExecution(interrupt.v1.Interrupt.BeginExecutionRequest request,
        io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.BeginExecutionResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getBeginExecutionMethod(), responseObserver);
    }

    /**
     * <pre>
     * Trips one execution, or every live execution of a context. Single-shot:
     * the first reason wins and later calls change nothing.
     * </pre>
     */
    default void interrupt(interrupt.v1.Interrupt.InterruptRequest request,
        io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.InterruptResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getInterruptMethod(), responseObserver);
    }

    /**
     * <pre>
     * Ends an execution: closes every tool's registrar. Idempotent.
     * </pre>
     */
    default void endExecution(interrupt.v1.Interrupt.EndExecutionRequest request,
        io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.EndExecutionResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getEndExecutionMethod(), responseObserver);
    }

    /**
     * <pre>
     * Renews an execution's lease.
     * </pre>
     */
    default void keepAlive(interrupt.v1.Interrupt.KeepAliveRequest request,
        io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.KeepAliveResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getKeepAliveMethod(), responseObserver);
    }

    /**
     * <pre>
     * The state of one execution (live, or recently ended).
     * </pre>
     */
    default void getExecution(interrupt.v1.Interrupt.GetExecutionRequest request,
        io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.GetExecutionResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetExecutionMethod(), responseObserver);
    }

    /**
     * <pre>
     * Live executions, optionally those of one context only.
     * </pre>
     */
    default void listExecutions(interrupt.v1.Interrupt.ListExecutionsRequest request,
        io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.ListExecutionsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListExecutionsMethod(), responseObserver);
    }

    /**
     * <pre>
     * A snapshot of the execution, then every event until it ends.
     * buf:lint:ignore RPC_RESPONSE_STANDARD_NAME
     * </pre>
     */
    default void watchExecution(interrupt.v1.Interrupt.WatchExecutionRequest request,
        io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.ExecutionEvent> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getWatchExecutionMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service CoordinatorService.
   * <pre>
   * CoordinatorService is what an agent runtime uses: begin a turn or task, trip
   * it, end it, and watch what its tools do.
   * </pre>
   */
  public static abstract class CoordinatorServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return CoordinatorServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service CoordinatorService.
   * <pre>
   * CoordinatorService is what an agent runtime uses: begin a turn or task, trip
   * it, end it, and watch what its tools do.
   * </pre>
   */
  public static final class CoordinatorServiceStub
      extends io.grpc.stub.AbstractAsyncStub<CoordinatorServiceStub> {
    private CoordinatorServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected CoordinatorServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new CoordinatorServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * Creates an execution with a fresh, untripped signal.
     * </pre>
     */
    public void beginExecution(interrupt.v1.Interrupt.BeginExecutionRequest request,
        io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.BeginExecutionResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getBeginExecutionMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Trips one execution, or every live execution of a context. Single-shot:
     * the first reason wins and later calls change nothing.
     * </pre>
     */
    public void interrupt(interrupt.v1.Interrupt.InterruptRequest request,
        io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.InterruptResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getInterruptMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Ends an execution: closes every tool's registrar. Idempotent.
     * </pre>
     */
    public void endExecution(interrupt.v1.Interrupt.EndExecutionRequest request,
        io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.EndExecutionResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getEndExecutionMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Renews an execution's lease.
     * </pre>
     */
    public void keepAlive(interrupt.v1.Interrupt.KeepAliveRequest request,
        io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.KeepAliveResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getKeepAliveMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * The state of one execution (live, or recently ended).
     * </pre>
     */
    public void getExecution(interrupt.v1.Interrupt.GetExecutionRequest request,
        io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.GetExecutionResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetExecutionMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Live executions, optionally those of one context only.
     * </pre>
     */
    public void listExecutions(interrupt.v1.Interrupt.ListExecutionsRequest request,
        io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.ListExecutionsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListExecutionsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * A snapshot of the execution, then every event until it ends.
     * buf:lint:ignore RPC_RESPONSE_STANDARD_NAME
     * </pre>
     */
    public void watchExecution(interrupt.v1.Interrupt.WatchExecutionRequest request,
        io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.ExecutionEvent> responseObserver) {
      io.grpc.stub.ClientCalls.asyncServerStreamingCall(
          getChannel().newCall(getWatchExecutionMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service CoordinatorService.
   * <pre>
   * CoordinatorService is what an agent runtime uses: begin a turn or task, trip
   * it, end it, and watch what its tools do.
   * </pre>
   */
  public static final class CoordinatorServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<CoordinatorServiceBlockingV2Stub> {
    private CoordinatorServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected CoordinatorServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new CoordinatorServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * Creates an execution with a fresh, untripped signal.
     * </pre>
     */
    public interrupt.v1.Interrupt.BeginExecutionResponse beginExecution(interrupt.v1.Interrupt.BeginExecutionRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getBeginExecutionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Trips one execution, or every live execution of a context. Single-shot:
     * the first reason wins and later calls change nothing.
     * </pre>
     */
    public interrupt.v1.Interrupt.InterruptResponse interrupt(interrupt.v1.Interrupt.InterruptRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getInterruptMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Ends an execution: closes every tool's registrar. Idempotent.
     * </pre>
     */
    public interrupt.v1.Interrupt.EndExecutionResponse endExecution(interrupt.v1.Interrupt.EndExecutionRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getEndExecutionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Renews an execution's lease.
     * </pre>
     */
    public interrupt.v1.Interrupt.KeepAliveResponse keepAlive(interrupt.v1.Interrupt.KeepAliveRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getKeepAliveMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * The state of one execution (live, or recently ended).
     * </pre>
     */
    public interrupt.v1.Interrupt.GetExecutionResponse getExecution(interrupt.v1.Interrupt.GetExecutionRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetExecutionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Live executions, optionally those of one context only.
     * </pre>
     */
    public interrupt.v1.Interrupt.ListExecutionsResponse listExecutions(interrupt.v1.Interrupt.ListExecutionsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListExecutionsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * A snapshot of the execution, then every event until it ends.
     * buf:lint:ignore RPC_RESPONSE_STANDARD_NAME
     * </pre>
     */
    @io.grpc.ExperimentalApi("https://github.com/grpc/grpc-java/issues/10918")
    public io.grpc.stub.BlockingClientCall<?, interrupt.v1.Interrupt.ExecutionEvent>
        watchExecution(interrupt.v1.Interrupt.WatchExecutionRequest request) {
      return io.grpc.stub.ClientCalls.blockingV2ServerStreamingCall(
          getChannel(), getWatchExecutionMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service CoordinatorService.
   * <pre>
   * CoordinatorService is what an agent runtime uses: begin a turn or task, trip
   * it, end it, and watch what its tools do.
   * </pre>
   */
  public static final class CoordinatorServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<CoordinatorServiceBlockingStub> {
    private CoordinatorServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected CoordinatorServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new CoordinatorServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * Creates an execution with a fresh, untripped signal.
     * </pre>
     */
    public interrupt.v1.Interrupt.BeginExecutionResponse beginExecution(interrupt.v1.Interrupt.BeginExecutionRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getBeginExecutionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Trips one execution, or every live execution of a context. Single-shot:
     * the first reason wins and later calls change nothing.
     * </pre>
     */
    public interrupt.v1.Interrupt.InterruptResponse interrupt(interrupt.v1.Interrupt.InterruptRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getInterruptMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Ends an execution: closes every tool's registrar. Idempotent.
     * </pre>
     */
    public interrupt.v1.Interrupt.EndExecutionResponse endExecution(interrupt.v1.Interrupt.EndExecutionRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getEndExecutionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Renews an execution's lease.
     * </pre>
     */
    public interrupt.v1.Interrupt.KeepAliveResponse keepAlive(interrupt.v1.Interrupt.KeepAliveRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getKeepAliveMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * The state of one execution (live, or recently ended).
     * </pre>
     */
    public interrupt.v1.Interrupt.GetExecutionResponse getExecution(interrupt.v1.Interrupt.GetExecutionRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetExecutionMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Live executions, optionally those of one context only.
     * </pre>
     */
    public interrupt.v1.Interrupt.ListExecutionsResponse listExecutions(interrupt.v1.Interrupt.ListExecutionsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListExecutionsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * A snapshot of the execution, then every event until it ends.
     * buf:lint:ignore RPC_RESPONSE_STANDARD_NAME
     * </pre>
     */
    public java.util.Iterator<interrupt.v1.Interrupt.ExecutionEvent> watchExecution(
        interrupt.v1.Interrupt.WatchExecutionRequest request) {
      return io.grpc.stub.ClientCalls.blockingServerStreamingCall(
          getChannel(), getWatchExecutionMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service CoordinatorService.
   * <pre>
   * CoordinatorService is what an agent runtime uses: begin a turn or task, trip
   * it, end it, and watch what its tools do.
   * </pre>
   */
  public static final class CoordinatorServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<CoordinatorServiceFutureStub> {
    private CoordinatorServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected CoordinatorServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new CoordinatorServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * Creates an execution with a fresh, untripped signal.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<interrupt.v1.Interrupt.BeginExecutionResponse> beginExecution(
        interrupt.v1.Interrupt.BeginExecutionRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getBeginExecutionMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Trips one execution, or every live execution of a context. Single-shot:
     * the first reason wins and later calls change nothing.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<interrupt.v1.Interrupt.InterruptResponse> interrupt(
        interrupt.v1.Interrupt.InterruptRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getInterruptMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Ends an execution: closes every tool's registrar. Idempotent.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<interrupt.v1.Interrupt.EndExecutionResponse> endExecution(
        interrupt.v1.Interrupt.EndExecutionRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getEndExecutionMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Renews an execution's lease.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<interrupt.v1.Interrupt.KeepAliveResponse> keepAlive(
        interrupt.v1.Interrupt.KeepAliveRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getKeepAliveMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * The state of one execution (live, or recently ended).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<interrupt.v1.Interrupt.GetExecutionResponse> getExecution(
        interrupt.v1.Interrupt.GetExecutionRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetExecutionMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Live executions, optionally those of one context only.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<interrupt.v1.Interrupt.ListExecutionsResponse> listExecutions(
        interrupt.v1.Interrupt.ListExecutionsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListExecutionsMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_BEGIN_EXECUTION = 0;
  private static final int METHODID_INTERRUPT = 1;
  private static final int METHODID_END_EXECUTION = 2;
  private static final int METHODID_KEEP_ALIVE = 3;
  private static final int METHODID_GET_EXECUTION = 4;
  private static final int METHODID_LIST_EXECUTIONS = 5;
  private static final int METHODID_WATCH_EXECUTION = 6;

  private static final class MethodHandlers<Req, Resp> implements
      io.grpc.stub.ServerCalls.UnaryMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ServerStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ClientStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.BidiStreamingMethod<Req, Resp> {
    private final AsyncService serviceImpl;
    private final int methodId;

    MethodHandlers(AsyncService serviceImpl, int methodId) {
      this.serviceImpl = serviceImpl;
      this.methodId = methodId;
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public void invoke(Req request, io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        case METHODID_BEGIN_EXECUTION:
          serviceImpl.beginExecution((interrupt.v1.Interrupt.BeginExecutionRequest) request,
              (io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.BeginExecutionResponse>) responseObserver);
          break;
        case METHODID_INTERRUPT:
          serviceImpl.interrupt((interrupt.v1.Interrupt.InterruptRequest) request,
              (io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.InterruptResponse>) responseObserver);
          break;
        case METHODID_END_EXECUTION:
          serviceImpl.endExecution((interrupt.v1.Interrupt.EndExecutionRequest) request,
              (io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.EndExecutionResponse>) responseObserver);
          break;
        case METHODID_KEEP_ALIVE:
          serviceImpl.keepAlive((interrupt.v1.Interrupt.KeepAliveRequest) request,
              (io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.KeepAliveResponse>) responseObserver);
          break;
        case METHODID_GET_EXECUTION:
          serviceImpl.getExecution((interrupt.v1.Interrupt.GetExecutionRequest) request,
              (io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.GetExecutionResponse>) responseObserver);
          break;
        case METHODID_LIST_EXECUTIONS:
          serviceImpl.listExecutions((interrupt.v1.Interrupt.ListExecutionsRequest) request,
              (io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.ListExecutionsResponse>) responseObserver);
          break;
        case METHODID_WATCH_EXECUTION:
          serviceImpl.watchExecution((interrupt.v1.Interrupt.WatchExecutionRequest) request,
              (io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.ExecutionEvent>) responseObserver);
          break;
        default:
          throw new AssertionError();
      }
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public io.grpc.stub.StreamObserver<Req> invoke(
        io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        default:
          throw new AssertionError();
      }
    }
  }

  public static final io.grpc.ServerServiceDefinition bindService(AsyncService service) {
    return io.grpc.ServerServiceDefinition.builder(getServiceDescriptor())
        .addMethod(
          getBeginExecutionMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              interrupt.v1.Interrupt.BeginExecutionRequest,
              interrupt.v1.Interrupt.BeginExecutionResponse>(
                service, METHODID_BEGIN_EXECUTION)))
        .addMethod(
          getInterruptMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              interrupt.v1.Interrupt.InterruptRequest,
              interrupt.v1.Interrupt.InterruptResponse>(
                service, METHODID_INTERRUPT)))
        .addMethod(
          getEndExecutionMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              interrupt.v1.Interrupt.EndExecutionRequest,
              interrupt.v1.Interrupt.EndExecutionResponse>(
                service, METHODID_END_EXECUTION)))
        .addMethod(
          getKeepAliveMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              interrupt.v1.Interrupt.KeepAliveRequest,
              interrupt.v1.Interrupt.KeepAliveResponse>(
                service, METHODID_KEEP_ALIVE)))
        .addMethod(
          getGetExecutionMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              interrupt.v1.Interrupt.GetExecutionRequest,
              interrupt.v1.Interrupt.GetExecutionResponse>(
                service, METHODID_GET_EXECUTION)))
        .addMethod(
          getListExecutionsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              interrupt.v1.Interrupt.ListExecutionsRequest,
              interrupt.v1.Interrupt.ListExecutionsResponse>(
                service, METHODID_LIST_EXECUTIONS)))
        .addMethod(
          getWatchExecutionMethod(),
          io.grpc.stub.ServerCalls.asyncServerStreamingCall(
            new MethodHandlers<
              interrupt.v1.Interrupt.WatchExecutionRequest,
              interrupt.v1.Interrupt.ExecutionEvent>(
                service, METHODID_WATCH_EXECUTION)))
        .build();
  }

  private static abstract class CoordinatorServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    CoordinatorServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return interrupt.v1.Interrupt.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("CoordinatorService");
    }
  }

  private static final class CoordinatorServiceFileDescriptorSupplier
      extends CoordinatorServiceBaseDescriptorSupplier {
    CoordinatorServiceFileDescriptorSupplier() {}
  }

  private static final class CoordinatorServiceMethodDescriptorSupplier
      extends CoordinatorServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    CoordinatorServiceMethodDescriptorSupplier(java.lang.String methodName) {
      this.methodName = methodName;
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.MethodDescriptor getMethodDescriptor() {
      return getServiceDescriptor().findMethodByName(methodName);
    }
  }

  private static volatile io.grpc.ServiceDescriptor serviceDescriptor;

  public static io.grpc.ServiceDescriptor getServiceDescriptor() {
    io.grpc.ServiceDescriptor result = serviceDescriptor;
    if (result == null) {
      synchronized (CoordinatorServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new CoordinatorServiceFileDescriptorSupplier())
              .addMethod(getBeginExecutionMethod())
              .addMethod(getInterruptMethod())
              .addMethod(getEndExecutionMethod())
              .addMethod(getKeepAliveMethod())
              .addMethod(getGetExecutionMethod())
              .addMethod(getListExecutionsMethod())
              .addMethod(getWatchExecutionMethod())
              .build();
        }
      }
    }
    return result;
  }
}
