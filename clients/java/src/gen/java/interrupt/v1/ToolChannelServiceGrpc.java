package interrupt.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * ToolChannelService is what a tool uses: one bidirectional stream per tool run.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class ToolChannelServiceGrpc {

  private ToolChannelServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "interrupt.v1.ToolChannelService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<interrupt.v1.Interrupt.ToolMessage,
      interrupt.v1.Interrupt.SidecarMessage> getAttachMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Attach",
      requestType = interrupt.v1.Interrupt.ToolMessage.class,
      responseType = interrupt.v1.Interrupt.SidecarMessage.class,
      methodType = io.grpc.MethodDescriptor.MethodType.BIDI_STREAMING)
  public static io.grpc.MethodDescriptor<interrupt.v1.Interrupt.ToolMessage,
      interrupt.v1.Interrupt.SidecarMessage> getAttachMethod() {
    io.grpc.MethodDescriptor<interrupt.v1.Interrupt.ToolMessage, interrupt.v1.Interrupt.SidecarMessage> getAttachMethod;
    if ((getAttachMethod = ToolChannelServiceGrpc.getAttachMethod) == null) {
      synchronized (ToolChannelServiceGrpc.class) {
        if ((getAttachMethod = ToolChannelServiceGrpc.getAttachMethod) == null) {
          ToolChannelServiceGrpc.getAttachMethod = getAttachMethod =
              io.grpc.MethodDescriptor.<interrupt.v1.Interrupt.ToolMessage, interrupt.v1.Interrupt.SidecarMessage>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.BIDI_STREAMING)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Attach"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  interrupt.v1.Interrupt.ToolMessage.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  interrupt.v1.Interrupt.SidecarMessage.getDefaultInstance()))
              .setSchemaDescriptor(new ToolChannelServiceMethodDescriptorSupplier("Attach"))
              .build();
        }
      }
    }
    return getAttachMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static ToolChannelServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ToolChannelServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ToolChannelServiceStub>() {
        @java.lang.Override
        public ToolChannelServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ToolChannelServiceStub(channel, callOptions);
        }
      };
    return ToolChannelServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static ToolChannelServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ToolChannelServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ToolChannelServiceBlockingV2Stub>() {
        @java.lang.Override
        public ToolChannelServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ToolChannelServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return ToolChannelServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static ToolChannelServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ToolChannelServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ToolChannelServiceBlockingStub>() {
        @java.lang.Override
        public ToolChannelServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ToolChannelServiceBlockingStub(channel, callOptions);
        }
      };
    return ToolChannelServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static ToolChannelServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ToolChannelServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ToolChannelServiceFutureStub>() {
        @java.lang.Override
        public ToolChannelServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ToolChannelServiceFutureStub(channel, callOptions);
        }
      };
    return ToolChannelServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * ToolChannelService is what a tool uses: one bidirectional stream per tool run.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * The first ToolMessage must be hello. The daemon answers attached, then
     * cancel when the execution trips (at once if it already has), run_terminator
     * for each callback terminator, and error for refused requests.
     * buf:lint:ignore RPC_REQUEST_STANDARD_NAME
     * buf:lint:ignore RPC_RESPONSE_STANDARD_NAME
     * </pre>
     */
    default io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.ToolMessage> attach(
        io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.SidecarMessage> responseObserver) {
      return io.grpc.stub.ServerCalls.asyncUnimplementedStreamingCall(getAttachMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service ToolChannelService.
   * <pre>
   * ToolChannelService is what a tool uses: one bidirectional stream per tool run.
   * </pre>
   */
  public static abstract class ToolChannelServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return ToolChannelServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service ToolChannelService.
   * <pre>
   * ToolChannelService is what a tool uses: one bidirectional stream per tool run.
   * </pre>
   */
  public static final class ToolChannelServiceStub
      extends io.grpc.stub.AbstractAsyncStub<ToolChannelServiceStub> {
    private ToolChannelServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ToolChannelServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ToolChannelServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * The first ToolMessage must be hello. The daemon answers attached, then
     * cancel when the execution trips (at once if it already has), run_terminator
     * for each callback terminator, and error for refused requests.
     * buf:lint:ignore RPC_REQUEST_STANDARD_NAME
     * buf:lint:ignore RPC_RESPONSE_STANDARD_NAME
     * </pre>
     */
    public io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.ToolMessage> attach(
        io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.SidecarMessage> responseObserver) {
      return io.grpc.stub.ClientCalls.asyncBidiStreamingCall(
          getChannel().newCall(getAttachMethod(), getCallOptions()), responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service ToolChannelService.
   * <pre>
   * ToolChannelService is what a tool uses: one bidirectional stream per tool run.
   * </pre>
   */
  public static final class ToolChannelServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<ToolChannelServiceBlockingV2Stub> {
    private ToolChannelServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ToolChannelServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ToolChannelServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * The first ToolMessage must be hello. The daemon answers attached, then
     * cancel when the execution trips (at once if it already has), run_terminator
     * for each callback terminator, and error for refused requests.
     * buf:lint:ignore RPC_REQUEST_STANDARD_NAME
     * buf:lint:ignore RPC_RESPONSE_STANDARD_NAME
     * </pre>
     */
    @io.grpc.ExperimentalApi("https://github.com/grpc/grpc-java/issues/10918")
    public io.grpc.stub.BlockingClientCall<interrupt.v1.Interrupt.ToolMessage, interrupt.v1.Interrupt.SidecarMessage>
        attach() {
      return io.grpc.stub.ClientCalls.blockingBidiStreamingCall(
          getChannel(), getAttachMethod(), getCallOptions());
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service ToolChannelService.
   * <pre>
   * ToolChannelService is what a tool uses: one bidirectional stream per tool run.
   * </pre>
   */
  public static final class ToolChannelServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<ToolChannelServiceBlockingStub> {
    private ToolChannelServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ToolChannelServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ToolChannelServiceBlockingStub(channel, callOptions);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service ToolChannelService.
   * <pre>
   * ToolChannelService is what a tool uses: one bidirectional stream per tool run.
   * </pre>
   */
  public static final class ToolChannelServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<ToolChannelServiceFutureStub> {
    private ToolChannelServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ToolChannelServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ToolChannelServiceFutureStub(channel, callOptions);
    }
  }

  private static final int METHODID_ATTACH = 0;

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
        default:
          throw new AssertionError();
      }
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public io.grpc.stub.StreamObserver<Req> invoke(
        io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        case METHODID_ATTACH:
          return (io.grpc.stub.StreamObserver<Req>) serviceImpl.attach(
              (io.grpc.stub.StreamObserver<interrupt.v1.Interrupt.SidecarMessage>) responseObserver);
        default:
          throw new AssertionError();
      }
    }
  }

  public static final io.grpc.ServerServiceDefinition bindService(AsyncService service) {
    return io.grpc.ServerServiceDefinition.builder(getServiceDescriptor())
        .addMethod(
          getAttachMethod(),
          io.grpc.stub.ServerCalls.asyncBidiStreamingCall(
            new MethodHandlers<
              interrupt.v1.Interrupt.ToolMessage,
              interrupt.v1.Interrupt.SidecarMessage>(
                service, METHODID_ATTACH)))
        .build();
  }

  private static abstract class ToolChannelServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    ToolChannelServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return interrupt.v1.Interrupt.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("ToolChannelService");
    }
  }

  private static final class ToolChannelServiceFileDescriptorSupplier
      extends ToolChannelServiceBaseDescriptorSupplier {
    ToolChannelServiceFileDescriptorSupplier() {}
  }

  private static final class ToolChannelServiceMethodDescriptorSupplier
      extends ToolChannelServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    ToolChannelServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (ToolChannelServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new ToolChannelServiceFileDescriptorSupplier())
              .addMethod(getAttachMethod())
              .build();
        }
      }
    }
    return result;
  }
}
