//! Where the daemon is, and how to reach it: explicit options first, then the environment.

use std::path::PathBuf;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint, Uri};

use crate::error::{Details, Error, Result};

/// The environment variable naming the daemon: `unix:///abs/path.sock` or `HOST:PORT`.
pub const ADDRESS_ENV: &str = "INTERRUPT_SIDECAR_ADDRESS";
/// The environment variable holding the attach token the agent handed to the tool.
pub const TOKEN_ENV: &str = "INTERRUPT_SIDECAR_TOKEN";
/// The environment variable that turns the cancel doorbell off: `0` (or `false`, `no`,
/// `off`) and the client never asks for it. Anything else, or unset, leaves it on.
pub const DOORBELL_ENV: &str = "INTERRUPT_SIDECAR_DOORBELL";

fn env(name: &str) -> Option<String> {
    let value = std::env::var(name).ok()?;
    let value = value.trim();
    (!value.is_empty()).then(|| value.to_owned())
}

/// Where `interrupt-sidecar serve` listens without `--listen` (the daemon's own rule):
/// `$XDG_RUNTIME_DIR/interrupt-sidecar/sidecar.sock`, else `/tmp/interrupt-sidecar-$UID/sidecar.sock`.
pub fn default_address() -> String {
    let base = match env("XDG_RUNTIME_DIR") {
        Some(runtime_dir) => PathBuf::from(runtime_dir).join("interrupt-sidecar"),
        // SAFETY: getuid has no preconditions and cannot fail.
        None => PathBuf::from(format!("/tmp/interrupt-sidecar-{}", unsafe {
            libc::getuid()
        })),
    };
    format!("unix://{}", base.join("sidecar.sock").display())
}

/// The daemon address: `explicit`, else `INTERRUPT_SIDECAR_ADDRESS`, else [`default_address`].
pub fn resolve_address(explicit: Option<&str>) -> String {
    match explicit {
        Some(address) if !address.is_empty() => address.to_owned(),
        _ => env(ADDRESS_ENV).unwrap_or_else(default_address),
    }
}

/// The attach token: `explicit` (sent as is, even empty), else `INTERRUPT_SIDECAR_TOKEN`.
/// `None` means no sidecar is configured: the run is a no-op.
pub(crate) fn resolve_token(explicit: Option<&str>) -> Option<String> {
    match explicit {
        Some(token) => Some(token.to_owned()),
        None => env(TOKEN_ENV),
    }
}

/// Whether to ask for the cancel doorbell: `explicit`, else `INTERRUPT_SIDECAR_DOORBELL`,
/// else yes; never when the daemon is not on a unix socket.
pub(crate) fn resolve_doorbell(explicit: Option<bool>, address: &str) -> bool {
    wants_doorbell(explicit, env(DOORBELL_ENV).as_deref(), address)
}

/// [`resolve_doorbell`] with the environment's value given (tests cannot set the
/// environment of a process whose other tests read it).
fn wants_doorbell(explicit: Option<bool>, env_value: Option<&str>, address: &str) -> bool {
    // The doorbell is a unix socket path on the daemon's host, and only a unix: address
    // says the daemon is on this host: over TCP the path could name nothing here, or
    // another daemon's socket.
    if !address.starts_with("unix:") {
        return false;
    }
    explicit.unwrap_or_else(|| {
        env_value.is_none_or(|value| {
            !["0", "false", "no", "off"]
                .iter()
                .any(|off| value.eq_ignore_ascii_case(off))
        })
    })
}

/// A parsed daemon address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// A unix socket path.
    Unix(PathBuf),
    /// `HOST:PORT` over plain HTTP/2 (loopback or a trusted network; the daemon wants a token).
    Tcp(String),
}

impl Target {
    pub(crate) fn parse(address: &str) -> Result<Self> {
        if let Some(rest) = address.strip_prefix("unix:") {
            // unix:///abs/path (the URI form) or unix:path (gRPC's short form).
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() {
                return Err(bad_address(address, "the socket path is empty"));
            }
            return Ok(Self::Unix(PathBuf::from(path)));
        }
        let host_port = address.strip_prefix("dns:").unwrap_or(address);
        let host_port = host_port.trim_start_matches('/');
        match host_port.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                Ok(Self::Tcp(host_port.to_owned()))
            }
            _ => Err(bad_address(
                address,
                "expected unix:///abs/path.sock or HOST:PORT",
            )),
        }
    }
}

fn bad_address(address: &str, why: &str) -> Error {
    Error::InvalidArgument(Details::new(format!(
        "invalid sidecar address {address:?}: {why}"
    )))
}

/// Opens an HTTP/2 channel to the daemon (eagerly, so an absent daemon shows here).
pub(crate) async fn connect(address: &str, timeout: Option<Duration>) -> Result<Channel> {
    let unreachable = |error: tonic::transport::Error| {
        let mut message = format!("cannot reach the sidecar at {address}: {error}");
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            let cause_text = cause.to_string();
            if !message.contains(&cause_text) {
                message.push_str(&format!(": {cause_text}"));
            }
            source = cause.source();
        }
        Error::Unavailable(Details::new(message))
    };
    match Target::parse(address)? {
        Target::Unix(path) => {
            // The authority is a placeholder: the connector ignores the URI.
            let mut endpoint = Endpoint::from_static("http://localhost");
            if let Some(timeout) = timeout {
                endpoint = endpoint.connect_timeout(timeout);
            }
            endpoint
                .connect_with_connector(tower::service_fn(move |_: Uri| {
                    let path = path.clone();
                    async move {
                        Ok::<_, std::io::Error>(TokioIo::new(
                            tokio::net::UnixStream::connect(path).await?,
                        ))
                    }
                }))
                .await
                .map_err(unreachable)
        }
        Target::Tcp(host_port) => {
            let mut endpoint = Endpoint::from_shared(format!("http://{host_port}"))
                .map_err(|error| bad_address(address, &error.to_string()))?
                .tcp_nodelay(true);
            if let Some(timeout) = timeout {
                endpoint = endpoint.connect_timeout(timeout);
            }
            endpoint.connect().await.map_err(unreachable)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_unix_and_tcp_addresses() {
        assert_eq!(
            Target::parse("unix:///run/s.sock").unwrap(),
            Target::Unix("/run/s.sock".into())
        );
        assert_eq!(
            Target::parse("unix:rel.sock").unwrap(),
            Target::Unix("rel.sock".into())
        );
        assert_eq!(
            Target::parse("127.0.0.1:7000").unwrap(),
            Target::Tcp("127.0.0.1:7000".into())
        );
        assert_eq!(
            Target::parse("[::1]:7000").unwrap(),
            Target::Tcp("[::1]:7000".into())
        );
        assert_eq!(
            Target::parse("dns:///localhost:7000").unwrap(),
            Target::Tcp("localhost:7000".into())
        );
        for bad in ["unix://", "localhost", ":7000", "host:port"] {
            let error = Target::parse(bad).unwrap_err();
            assert!(matches!(error, Error::InvalidArgument(_)), "{bad}: {error}");
        }
    }

    #[test]
    fn explicit_values_win() {
        assert_eq!(resolve_address(Some("unix:///x.sock")), "unix:///x.sock");
        assert_eq!(resolve_token(Some("")), Some(String::new()));
    }

    #[test]
    fn the_doorbell_is_asked_for_over_unix_sockets_unless_turned_off() {
        let unix = "unix:///run/s.sock";
        assert!(wants_doorbell(None, None, unix));
        assert!(wants_doorbell(None, None, "unix:rel.sock"));
        for off in ["0", "false", "FALSE", "no", "off", "Off"] {
            assert!(!wants_doorbell(None, Some(off), unix), "{off}");
        }
        for on in ["1", "true", "yes", "on", "auto"] {
            assert!(wants_doorbell(None, Some(on), unix), "{on}");
        }
        // The option beats the environment, both ways.
        assert!(!wants_doorbell(Some(false), None, unix));
        assert!(wants_doorbell(Some(true), Some("0"), unix));
        // Never over TCP: the path would not be on this host.
        assert!(!wants_doorbell(None, None, "127.0.0.1:7000"));
        assert!(!wants_doorbell(Some(true), None, "dns:///localhost:7000"));
    }

    #[test]
    fn default_address_is_a_unix_socket() {
        let address = default_address();
        assert!(address.starts_with("unix:///"), "{address}");
        assert!(address.ends_with("/sidecar.sock"), "{address}");
    }

    #[tokio::test]
    async fn an_absent_daemon_is_unavailable() {
        let dir = std::env::temp_dir().join(format!("isc-rust-test-{}", std::process::id()));
        let address = format!("unix://{}/missing.sock", dir.display());
        let error = connect(&address, Some(Duration::from_secs(2)))
            .await
            .unwrap_err();
        assert!(matches!(error, Error::Unavailable(_)), "{error}");
        assert!(error.message().contains("missing.sock"), "{error}");
    }
}
