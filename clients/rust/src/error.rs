//! One error type for everything the sidecar refuses or the client cannot do, mapped at
//! the gRPC boundary.
//!
//! Each variant names the gRPC status it stands for ([`Error::code`]). A refused `Attach`
//! (the stream ends with a status) and a refused request on the stream (a `ChannelError`
//! message) map to the same variants. Being cancelled is *not* an error of this type: it
//! is the run's normal news, read from [`Run::token`](crate::Run::token) and
//! [`Run::cancellation`](crate::Run::cancellation).

use std::fmt;
use std::sync::Arc;

use tonic::Code;

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What the daemon (or the client) said, and the terminator concerned, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Details {
    /// A message a person can act on (the daemon's, prefixed with what was being done).
    pub message: String,
    /// The terminator the error concerns, when there is one.
    pub terminator_id: Option<String>,
}

impl Details {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            terminator_id: None,
        }
    }

    pub(crate) fn for_terminator(message: impl Into<String>, terminator_id: &str) -> Self {
        Self {
            message: message.into(),
            terminator_id: (!terminator_id.is_empty()).then(|| terminator_id.to_owned()),
        }
    }
}

impl fmt::Display for Details {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// An error of the sidecar client. Each variant maps to one gRPC status code.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// INVALID_ARGUMENT: a malformed token, a bad field, a pgid ≤ 1, a bad address.
    #[error("{0} (INVALID_ARGUMENT)")]
    InvalidArgument(Details),
    /// NOT_FOUND: unknown token, the execution ended, no such process group.
    #[error("{0} (NOT_FOUND)")]
    NotFound(Details),
    /// ALREADY_EXISTS: a terminator with that id is registered already.
    #[error("{0} (ALREADY_EXISTS)")]
    AlreadyExists(Details),
    /// FAILED_PRECONDITION: the behaviour forbids it, the run has unwound, the execution ended.
    #[error("{0} (FAILED_PRECONDITION)")]
    FailedPrecondition(Details),
    /// PERMISSION_DENIED: the attach token's secret is wrong.
    #[error("{0} (PERMISSION_DENIED)")]
    PermissionDenied(Details),
    /// UNAUTHENTICATED: an empty attach token.
    #[error("{0} (UNAUTHENTICATED)")]
    Unauthenticated(Details),
    /// RESOURCE_EXHAUSTED: a limit of the daemon was reached.
    #[error("{0} (RESOURCE_EXHAUSTED)")]
    ResourceExhausted(Details),
    /// UNAVAILABLE: the daemon could not be reached at the configured address.
    #[error("{0} (UNAVAILABLE)")]
    Unavailable(Details),
    /// UNAVAILABLE: the tool's stream to the daemon ended before the tool's run did (the
    /// daemon died or restarted). The run is not cancelled by this; attach again if needed.
    #[error("{0} (UNAVAILABLE)")]
    ConnectionLost(Details),
    /// DEADLINE_EXCEEDED: the daemon did not answer within the run's timeout.
    #[error("{0} (DEADLINE_EXCEEDED)")]
    DeadlineExceeded(Details),
    /// Any other status the daemon answered with.
    #[error("{details} ({})", code_name(*.code))]
    Other {
        /// The gRPC status code.
        code: Code,
        /// What the daemon said.
        details: Details,
    },
    /// A local I/O failure, e.g. starting a child process (status UNKNOWN).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The operating system's error.
        #[source]
        source: Arc<std::io::Error>,
    },
}

impl Error {
    /// The error for a gRPC status code, as the daemon reports it in a `ChannelError` or a
    /// stream's final status.
    pub fn from_code(code: Code, details: Details) -> Self {
        match code {
            Code::InvalidArgument => Self::InvalidArgument(details),
            Code::NotFound => Self::NotFound(details),
            Code::AlreadyExists => Self::AlreadyExists(details),
            Code::FailedPrecondition => Self::FailedPrecondition(details),
            Code::PermissionDenied => Self::PermissionDenied(details),
            Code::Unauthenticated => Self::Unauthenticated(details),
            Code::ResourceExhausted => Self::ResourceExhausted(details),
            Code::Unavailable => Self::Unavailable(details),
            Code::DeadlineExceeded => Self::DeadlineExceeded(details),
            code => Self::Other { code, details },
        }
    }

    /// The error for a status code number (a `ChannelError.code`).
    pub fn from_code_number(code: i32, details: Details) -> Self {
        let status = Code::from_i32(code);
        if status == Code::Unknown && code != Code::Unknown as i32 {
            let details = Details {
                message: format!("{} [status {code}]", details.message),
                ..details
            };
            return Self::from_code(status, details);
        }
        Self::from_code(status, details)
    }

    /// The error for a failed RPC; `what` says what was being done.
    pub(crate) fn from_status(status: &tonic::Status, what: &str) -> Self {
        let message = if status.message().is_empty() {
            "no details"
        } else {
            status.message()
        };
        Self::from_code(status.code(), Details::new(format!("{what}: {message}")))
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source: Arc::new(source),
        }
    }

    /// The gRPC status code this error stands for.
    pub fn code(&self) -> Code {
        match self {
            Self::InvalidArgument(_) => Code::InvalidArgument,
            Self::NotFound(_) => Code::NotFound,
            Self::AlreadyExists(_) => Code::AlreadyExists,
            Self::FailedPrecondition(_) => Code::FailedPrecondition,
            Self::PermissionDenied(_) => Code::PermissionDenied,
            Self::Unauthenticated(_) => Code::Unauthenticated,
            Self::ResourceExhausted(_) => Code::ResourceExhausted,
            Self::Unavailable(_) | Self::ConnectionLost(_) => Code::Unavailable,
            Self::DeadlineExceeded(_) => Code::DeadlineExceeded,
            Self::Other { code, .. } => *code,
            Self::Io { .. } => Code::Unknown,
        }
    }

    /// The canonical name of [`Error::code`], e.g. `"FAILED_PRECONDITION"`.
    pub fn code_name(&self) -> &'static str {
        code_name(self.code())
    }

    /// The message without the code.
    pub fn message(&self) -> String {
        match self.details() {
            Some(details) => details.message.clone(),
            None => self.to_string(),
        }
    }

    /// The terminator the error concerns, when there is one.
    pub fn terminator_id(&self) -> Option<&str> {
        self.details()?.terminator_id.as_deref()
    }

    fn details(&self) -> Option<&Details> {
        match self {
            Self::InvalidArgument(d)
            | Self::NotFound(d)
            | Self::AlreadyExists(d)
            | Self::FailedPrecondition(d)
            | Self::PermissionDenied(d)
            | Self::Unauthenticated(d)
            | Self::ResourceExhausted(d)
            | Self::Unavailable(d)
            | Self::ConnectionLost(d)
            | Self::DeadlineExceeded(d)
            | Self::Other { details: d, .. } => Some(d),
            Self::Io { .. } => None,
        }
    }
}

/// The canonical name of a gRPC status code (`"NOT_FOUND"`), as in the gRPC spec.
pub fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_error_numbers_map_to_variants() {
        let error = Error::from_code_number(9, Details::for_terminator("run closed", "t1"));
        assert!(matches!(error, Error::FailedPrecondition(_)));
        assert_eq!(error.code_name(), "FAILED_PRECONDITION");
        assert_eq!(error.terminator_id(), Some("t1"));
        assert_eq!(error.to_string(), "run closed (FAILED_PRECONDITION)");
        assert!(matches!(
            Error::from_code_number(16, Details::new("x")),
            Error::Unauthenticated(_)
        ));
        assert!(matches!(
            Error::from_code_number(14, Details::new("x")),
            Error::Unavailable(_)
        ));
    }

    #[test]
    fn unknown_numbers_keep_the_number() {
        let error = Error::from_code_number(42, Details::new("odd"));
        assert_eq!(error.code(), Code::Unknown);
        assert_eq!(error.message(), "odd [status 42]");
        assert_eq!(error.to_string(), "odd [status 42] (UNKNOWN)");
    }

    #[test]
    fn connection_lost_is_unavailable() {
        let error = Error::ConnectionLost(Details::new("gone"));
        assert_eq!(error.code(), Code::Unavailable);
        assert_eq!(error.terminator_id(), None);
    }

    #[test]
    fn statuses_keep_what_was_being_done() {
        let status = tonic::Status::permission_denied("wrong secret");
        let error = Error::from_status(&status, "attach");
        assert!(matches!(error, Error::PermissionDenied(_)));
        assert_eq!(error.message(), "attach: wrong secret");
    }
}
