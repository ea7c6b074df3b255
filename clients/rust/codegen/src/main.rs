//! Writes the Rust messages and gRPC client stubs of `protos/` into a directory.
//!
//! `interrupt-sidecar-codegen OUT_DIR PROTO_ROOT PROTO...` — run by
//! `scripts/protogen/rust.py`, which sets `PROTOC` to the project's pinned protoc
//! (grpcio-tools). The output is one `<package>.rs` file per proto package, formatted
//! by prettyplease, byte-for-byte the same on every run.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [out, proto_root, protos @ ..] = args.as_slice() else {
        eprintln!("usage: interrupt-sidecar-codegen OUT_DIR PROTO_ROOT PROTO...");
        return ExitCode::from(2);
    };
    if protos.is_empty() {
        eprintln!("no .proto files given");
        return ExitCode::from(2);
    }
    let result = tonic_prost_build::configure()
        // Tools are clients; the daemon is the Python server.
        .build_server(false)
        .build_client(true)
        .out_dir(out)
        .compile_protos(protos, std::slice::from_ref(proto_root));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("code generation failed: {error}");
            ExitCode::FAILURE
        }
    }
}
