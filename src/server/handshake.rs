//! The session state machine of PROTOCOL.md §3, pure: no I/O, no clock.

use crate::error::{ErrorCode, RpcError};
use crate::jsonrpc::RequestId;
use crate::protocol::methods;

/// Where a session stands in its handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Nothing but `initialize` (id 1) is served; other requests get `-32002`.
    AwaitingInitialize,
    /// `initialize` was answered: requests are served, but the server sends
    /// no notification of its own until the client's `initialized`.
    InitializedSent,
    /// The handshake is complete: notifications may flow.
    Ready,
    /// An implicit session (an HTTP single exchange): served as already
    /// initialized, and never sent notifications, since its one response
    /// carries only the replies.
    Implicit,
}

/// What to do with a request, given the phase.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Run the handshake: answer `initialize`.
    Initialize,
    /// Serve the request through the method table.
    Serve,
    /// Answer with this error and change nothing.
    Reject(RpcError),
}

impl Phase {
    /// Decides how a request with `method` and `id` is handled.
    pub(crate) fn admit(self, method: &str, id: &RequestId) -> Admission {
        let is_initialize = method == methods::INITIALIZE;
        match self {
            Self::AwaitingInitialize if is_initialize && id.is_one() => Admission::Initialize,
            Self::AwaitingInitialize if is_initialize => {
                Admission::Reject(RpcError::invalid_request(format!(
                    "initialize must carry the integer id 1, not {id}"
                )))
            }
            Self::AwaitingInitialize => Admission::Reject(RpcError::new(
                ErrorCode::SERVER_NOT_INITIALIZED,
                format!("'{method}' before initialize: the first request must be initialize"),
            )),
            Self::InitializedSent | Self::Ready if is_initialize => Admission::Reject(
                RpcError::invalid_request("the session is already initialized"),
            ),
            Self::Implicit if is_initialize => Admission::Reject(RpcError::invalid_request(
                "initialize must be the first message of a session; this one is implicit \
                 (an HTTP exchange whose first message was not initialize)",
            )),
            Self::InitializedSent | Self::Ready | Self::Implicit => Admission::Serve,
        }
    }

    /// The phase after a successful `initialize` reply.
    pub(crate) fn after_initialize(self) -> Self {
        match self {
            Self::AwaitingInitialize => Self::InitializedSent,
            other => other,
        }
    }

    /// The phase after the client's `initialized` notification (ignored
    /// before `initialize` and when already ready).
    pub(crate) fn after_initialized(self) -> Self {
        match self {
            Self::InitializedSent => Self::Ready,
            other => other,
        }
    }

    /// Notifications other than the handshake's are dropped before `initialize`.
    pub(crate) fn hears_notifications(self) -> bool {
        self != Self::AwaitingInitialize
    }
}

#[cfg(test)]
mod tests {
    use super::Admission::*;
    use super::Phase::*;
    use super::*;

    fn code(a: Admission) -> i32 {
        match a {
            Reject(e) => e.code.0,
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    #[test]
    fn initialize_with_id_1_starts_the_handshake() {
        assert_eq!(
            AwaitingInitialize.admit("initialize", &RequestId::from(1)),
            Initialize
        );
        assert_eq!(AwaitingInitialize.after_initialize(), InitializedSent);
    }

    #[test]
    fn initialize_with_another_id_is_invalid_and_keeps_waiting() {
        assert_eq!(
            code(AwaitingInitialize.admit("initialize", &RequestId::from(2))),
            -32600
        );
        assert_eq!(
            code(AwaitingInitialize.admit("initialize", &RequestId::from("1"))),
            -32600
        );
        assert_eq!(
            code(AwaitingInitialize.admit("initialize", &RequestId::Null)),
            -32600
        );
    }

    #[test]
    fn any_other_request_before_initialize_is_not_initialized() {
        for method in ["mcp/listTools", "mcp/executeTool", "foo/bar", "rpc.x"] {
            assert_eq!(
                code(AwaitingInitialize.admit(method, &RequestId::from(3))),
                -32002
            );
        }
    }

    #[test]
    fn second_initialize_is_invalid_in_every_later_phase() {
        for phase in [InitializedSent, Ready] {
            assert_eq!(code(phase.admit("initialize", &RequestId::from(1))), -32600);
        }
    }

    #[test]
    fn requests_before_initialized_are_served() {
        assert_eq!(
            InitializedSent.admit("mcp/listTools", &RequestId::from(2)),
            Serve
        );
    }

    #[test]
    fn initialized_before_initialize_is_ignored() {
        assert_eq!(AwaitingInitialize.after_initialized(), AwaitingInitialize);
        assert!(!AwaitingInitialize.hears_notifications());
    }

    #[test]
    fn implicit_sessions_serve_at_once_and_never_become_ready() {
        assert_eq!(Implicit.admit("mcp/listTools", &RequestId::from(2)), Serve);
        assert_eq!(
            code(Implicit.admit("initialize", &RequestId::from(1))),
            -32600
        );
        assert_eq!(Implicit.after_initialized(), Implicit);
        assert_eq!(Implicit.after_initialize(), Implicit);
        assert!(Implicit.hears_notifications());
    }

    #[test]
    fn initialized_makes_the_session_ready_once() {
        assert_eq!(InitializedSent.after_initialized(), Ready);
        assert_eq!(Ready.after_initialized(), Ready);
        assert_eq!(Ready.after_initialize(), Ready);
    }
}
