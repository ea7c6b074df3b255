/**
 * `@interrupt-sidecar/client/proto`: the generated messages and gRPC stubs of
 * `interrupt.v1`, for code that speaks the protocol itself instead of through
 * {@link attach} (the conformance suite's `refused_on_the_wire` does, to put on the wire
 * what the client refuses locally).
 *
 * `credentials` comes from the same `@grpc/grpc-js` the stubs were built against: channel
 * credentials of another copy of grpc-js are not accepted by these stubs' constructors.
 */

export * from "../gen/interrupt/v1/interrupt";
export { credentials } from "@grpc/grpc-js";
