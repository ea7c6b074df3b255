//! Value types of the tool side: behaviours, reasons, outcomes and the cancellation.
//!
//! Each enum mirrors one of the wire's (`interrupt.v1`) without its `UNSPECIFIED` value;
//! `as_str` and `Display` give the wire's name without its prefix (`USER_SIGINT`).

use std::fmt;
use std::time::{Duration, SystemTime};

use crate::proto;

/// How a tool takes an interrupt, declared once when it attaches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum InterruptBehavior {
    /// Not sent the cancel; may not register terminators. For short atomic work. The default.
    #[default]
    NonInterruptible,
    /// Sent the cancel; the tool watches its token and returns early. No terminators.
    Cooperative,
    /// Sent the cancel; may register callback terminators. In Rust "interrupting the worker"
    /// means dropping its future: see [`Run::interruptible`](crate::Run::interruptible).
    ThreadInterrupt,
    /// Sent the cancel; may register callback and process-group terminators (the daemon
    /// kills the groups itself).
    ExternallyTerminated,
}

impl InterruptBehavior {
    /// True for the behaviours the daemon sends the cancel to (all but `NonInterruptible`).
    pub fn receives_cancel(self) -> bool {
        self != Self::NonInterruptible
    }

    /// True when callback terminators may be registered.
    pub fn may_register_callbacks(self) -> bool {
        matches!(self, Self::ThreadInterrupt | Self::ExternallyTerminated)
    }

    /// True when process-group terminators may be registered.
    pub fn may_register_process_groups(self) -> bool {
        self == Self::ExternallyTerminated
    }

    /// The wire's name without its prefix, e.g. `"COOPERATIVE"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NonInterruptible => "NON_INTERRUPTIBLE",
            Self::Cooperative => "COOPERATIVE",
            Self::ThreadInterrupt => "THREAD_INTERRUPT",
            Self::ExternallyTerminated => "EXTERNALLY_TERMINATED",
        }
    }

    pub(crate) fn to_proto(self) -> proto::InterruptBehavior {
        match self {
            Self::NonInterruptible => proto::InterruptBehavior::NonInterruptible,
            Self::Cooperative => proto::InterruptBehavior::Cooperative,
            Self::ThreadInterrupt => proto::InterruptBehavior::ThreadInterrupt,
            Self::ExternallyTerminated => proto::InterruptBehavior::ExternallyTerminated,
        }
    }
}

impl fmt::Display for InterruptBehavior {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an execution was cancelled. For observation only (messages, logs): behaviour
/// depends on "cancelled", never on the reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InterruptReason {
    /// The user pressed Ctrl+C.
    UserSigint,
    /// A priority ("NOW") input arrived for the agent.
    NowPriorityInput,
    /// The execution's wall-clock budget ran out.
    BudgetExceeded,
    /// The parent execution was cancelled (cascade).
    ParentCancelled,
    /// The task was cancelled.
    TaskCancelled,
    /// The daemon is shutting down.
    SystemShutdown,
    /// The owner stopped renewing the execution's lease.
    LeaseLost,
    /// The session was released.
    SessionReleased,
    /// The holder of the execution is gone.
    HolderLost,
}

impl InterruptReason {
    /// Every reason, in the wire's order.
    pub const ALL: [Self; 9] = [
        Self::UserSigint,
        Self::NowPriorityInput,
        Self::BudgetExceeded,
        Self::ParentCancelled,
        Self::TaskCancelled,
        Self::SystemShutdown,
        Self::LeaseLost,
        Self::SessionReleased,
        Self::HolderLost,
    ];

    /// The wire's name without its prefix, e.g. `"USER_SIGINT"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UserSigint => "USER_SIGINT",
            Self::NowPriorityInput => "NOW_PRIORITY_INPUT",
            Self::BudgetExceeded => "BUDGET_EXCEEDED",
            Self::ParentCancelled => "PARENT_CANCELLED",
            Self::TaskCancelled => "TASK_CANCELLED",
            Self::SystemShutdown => "SYSTEM_SHUTDOWN",
            Self::LeaseLost => "LEASE_LOST",
            Self::SessionReleased => "SESSION_RELEASED",
            Self::HolderLost => "HOLDER_LOST",
        }
    }

    /// The reason for a wire number; `None` for `UNSPECIFIED` and numbers this client does not know.
    pub fn from_wire(value: i32) -> Option<Self> {
        match proto::InterruptReason::try_from(value).ok()? {
            proto::InterruptReason::Unspecified => None,
            proto::InterruptReason::UserSigint => Some(Self::UserSigint),
            proto::InterruptReason::NowPriorityInput => Some(Self::NowPriorityInput),
            proto::InterruptReason::BudgetExceeded => Some(Self::BudgetExceeded),
            proto::InterruptReason::ParentCancelled => Some(Self::ParentCancelled),
            proto::InterruptReason::TaskCancelled => Some(Self::TaskCancelled),
            proto::InterruptReason::SystemShutdown => Some(Self::SystemShutdown),
            proto::InterruptReason::LeaseLost => Some(Self::LeaseLost),
            proto::InterruptReason::SessionReleased => Some(Self::SessionReleased),
            proto::InterruptReason::HolderLost => Some(Self::HolderLost),
        }
    }
}

impl fmt::Display for InterruptReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a tool's run ended, as the tool reports it in [`Run::unwound`](crate::Run::unwound).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ToolOutcome {
    /// The work finished normally.
    Completed,
    /// The work stopped early because of the cancel.
    Interrupted,
    /// The work failed for a reason of its own.
    Failed,
}

impl ToolOutcome {
    /// The wire's name without its prefix, e.g. `"INTERRUPTED"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "COMPLETED",
            Self::Interrupted => "INTERRUPTED",
            Self::Failed => "FAILED",
        }
    }

    pub(crate) fn to_proto(self) -> proto::ToolOutcome {
        match self {
            Self::Completed => proto::ToolOutcome::Completed,
            Self::Interrupted => proto::ToolOutcome::Interrupted,
            Self::Failed => proto::ToolOutcome::Failed,
        }
    }
}

impl fmt::Display for ToolOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a tripped run holds: the first reason, and what came with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cancellation {
    /// The execution's reason: the first one it tripped with.
    pub reason: InterruptReason,
    /// The interrupt's free text, if any.
    pub detail: String,
    /// When the execution tripped (unknown for a tool that only saw it at attach time).
    pub tripped_at: Option<SystemTime>,
    /// Report unwound before this, or the tool counts as a grace overrun.
    pub grace_deadline: Option<SystemTime>,
}

impl Cancellation {
    pub(crate) fn from_proto(cancel: &proto::Cancel) -> Self {
        Self {
            // An unset or unknown reason (a newer daemon) still means "cancelled".
            reason: InterruptReason::from_wire(cancel.reason)
                .unwrap_or(InterruptReason::UserSigint),
            detail: cancel.detail.clone(),
            tripped_at: cancel.tripped_at.and_then(system_time),
            grace_deadline: cancel.grace_deadline.and_then(system_time),
        }
    }
}

impl fmt::Display for Cancellation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "execution cancelled: {}", self.reason)?;
        if !self.detail.is_empty() {
            write!(f, " ({})", self.detail)?;
        }
        Ok(())
    }
}

impl std::error::Error for Cancellation {}

pub(crate) fn system_time(timestamp: prost_types::Timestamp) -> Option<SystemTime> {
    SystemTime::try_from(timestamp).ok()
}

pub(crate) fn duration(value: Option<prost_types::Duration>) -> Option<Duration> {
    value.and_then(|d| Duration::try_from(d).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_round_trip_through_the_wire_numbers() {
        for (number, reason) in (1..).zip(InterruptReason::ALL) {
            assert_eq!(InterruptReason::from_wire(number), Some(reason));
            let wire = proto::InterruptReason::try_from(number).unwrap();
            assert_eq!(wire.as_str_name(), format!("INTERRUPT_REASON_{reason}"));
        }
        assert_eq!(InterruptReason::from_wire(0), None);
        assert_eq!(InterruptReason::from_wire(99), None);
    }

    #[test]
    fn behaviours_name_the_wire_values() {
        for behavior in [
            InterruptBehavior::NonInterruptible,
            InterruptBehavior::Cooperative,
            InterruptBehavior::ThreadInterrupt,
            InterruptBehavior::ExternallyTerminated,
        ] {
            assert_eq!(
                behavior.to_proto().as_str_name(),
                format!("INTERRUPT_BEHAVIOR_{behavior}")
            );
        }
        assert_eq!(
            InterruptBehavior::default(),
            InterruptBehavior::NonInterruptible
        );
        assert!(!InterruptBehavior::Cooperative.may_register_callbacks());
        assert!(InterruptBehavior::ThreadInterrupt.may_register_callbacks());
        assert!(!InterruptBehavior::ThreadInterrupt.may_register_process_groups());
        assert!(InterruptBehavior::ExternallyTerminated.may_register_process_groups());
    }

    #[test]
    fn a_cancel_becomes_a_cancellation() {
        let cancel = proto::Cancel {
            reason: proto::InterruptReason::NowPriorityInput as i32,
            detail: "new input".into(),
            tripped_at: Some(prost_types::Timestamp {
                seconds: 10,
                nanos: 5,
            }),
            grace_deadline: None,
        };
        let cancellation = Cancellation::from_proto(&cancel);
        assert_eq!(cancellation.reason, InterruptReason::NowPriorityInput);
        assert_eq!(
            cancellation.tripped_at,
            Some(SystemTime::UNIX_EPOCH + Duration::new(10, 5))
        );
        assert_eq!(
            cancellation.to_string(),
            "execution cancelled: NOW_PRIORITY_INPUT (new input)"
        );
    }
}
