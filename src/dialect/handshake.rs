//! The session state machine of docs/mcp-v1.md §3 (and its twin in the Model
//! Context Protocol), pure: no I/O, no clock. Which requests each phase
//! lets through is the dialect's rule (`Dialect::admit`).

/// Where a session stands in its handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Nothing but `initialize` is served (and `ping` in the Model Context
    /// Protocol).
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

impl Phase {
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
    use super::Phase::*;

    #[test]
    fn initialize_then_initialized_makes_the_session_ready_once() {
        assert_eq!(AwaitingInitialize.after_initialize(), InitializedSent);
        assert_eq!(InitializedSent.after_initialized(), Ready);
        assert_eq!(Ready.after_initialized(), Ready);
        assert_eq!(Ready.after_initialize(), Ready);
    }

    #[test]
    fn initialized_before_initialize_is_ignored() {
        assert_eq!(AwaitingInitialize.after_initialized(), AwaitingInitialize);
        assert!(!AwaitingInitialize.hears_notifications());
    }

    #[test]
    fn implicit_sessions_never_become_ready() {
        assert_eq!(Implicit.after_initialized(), Implicit);
        assert_eq!(Implicit.after_initialize(), Implicit);
        assert!(Implicit.hears_notifications());
    }
}
