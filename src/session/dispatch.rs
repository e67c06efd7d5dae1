//! The one dispatch path: [`dispatch`] turns any incoming message into a
//! reply, a job or an effect, and [`Job::poll_once`] is the one executor policy
//! a job then meets — polled once where it was dispatched, unless its tool
//! may block, else run on in a task. Every transport comes through here:
//! the session reader (stdio, Streamable HTTP, a streaming MCP v1.0
//! session), a message served alone — an HTTP single exchange, a
//! 2026-07-28 request, `Server::serve_message` ([`alone`]) — and a
//! Streamable HTTP POST served on its own task ([`beside`]).

use std::sync::Arc;
use std::time::Instant;

use serde_json::value::RawValue;

use super::job::{Job, Run};
use super::listen::Listening;
use super::outbox::Handled;
use super::shared::Shared;
use super::slots::Slot;
use super::traced::{ToolFailure, Traced};
use crate::dialect::{Change, Control, Dialect, Listing, Phase, Request, Routed, Step, TraceLevel};
use crate::engine::operation;
use crate::error::{ErrorCode, RpcError};
use crate::in_flight::{COUNTED_FROM, Reservation};
use crate::jsonrpc::{self, Incoming, Reply, RequestId};
use crate::principal::{Caller, CountedAs, Principal};

/// What a message asks of its session: the one result of [`dispatch`].
pub(crate) enum Dispatched {
    /// Nothing to send (a notification, the client's response to a request
    /// of the server's).
    Nothing,
    /// A reply known at once.
    Reply(Handled),
    /// Work whose end makes the reply, run by the one executor policy
    /// ([`Job::poll_once`], then a task).
    Run(Job),
    /// A change to the reader's own state.
    Effect(Effect),
    /// A request the caller's token lacks scopes for: its JSON-RPC error
    /// reply (`-32007`), with every scope the request's item needs
    /// (`Handled::refused`) — for a transport that can still answer with a
    /// challenge instead.
    Forbidden(Handled),
}

/// A change a message asks of the session's reader (its phase, its parked
/// requests, its trace level): applied by the reader (`Session::apply`), never by
/// [`dispatch`], so that a message served away from the reader changes
/// nothing the reader owns.
pub(crate) enum Effect {
    /// `initialize` succeeded: the handshake moves on, then this reply goes
    /// out.
    Initialized(Handled),
    /// The client's `initialized`: the session becomes ready for pushes.
    Ready,
    /// Stop the requests with this id (in flight or parked).
    Cancel(RequestId),
    /// MCP v1.0's trace level.
    SetTrace(TraceLevel),
}

/// The one dispatch: turns a message into a reply, a job, or an effect on
/// the reader, for every transport — the stdio and Streamable HTTP
/// readers, a message served alone ([`alone`]) and a Streamable HTTP
/// POST served on its own task ([`beside`]). Requests go through the
/// dialect's handshake rules and method table; notifications become
/// effects; the client's responses to the server's own requests complete
/// them here. `phase` is the session's handshake phase; `draining` says
/// whether shutdown began (requests are then refused, as the dialect
/// refuses them at shutdown: `Dialect::shutting_down`); `caller`
/// is who sent it (its work is refused when the caller's token lacks the
/// scopes its item needs, and its context carries it).
pub(crate) fn dispatch(
    shared: &Arc<Shared>,
    phase: Phase,
    draining: bool,
    message: Incoming<'_>,
    caller: &Caller,
) -> Dispatched {
    let dialect = shared.dialect;
    // A request's span (feature `otel`; nothing without it).
    let traced = Traced::of_request(shared, &message, caller);
    let refused = |id: RequestId, reply: Reply| {
        traced.ended(Some(&reply), ToolFailure::default());
        Dispatched::Reply(Handled::reply(id, Some(reply)))
    };
    match message {
        Incoming::Request {
            id: RequestId::Null,
            ..
        } if !dialect.allows_null_ids() => {
            let error = RpcError::invalid_request("id must be a string or an integer");
            refused(RequestId::Null, dialect.error(None, &error))
        }
        Incoming::Request { id, .. } if caller.is_revoked() => {
            // Its stream's token was revoked (docs/oauth.md §3): the stream
            // ends once this is answered.
            let error = RpcError::new(
                ErrorCode::TOKEN_EXPIRED,
                "the access token of this stream is no longer active (revoked or expired): \
                 open a new one with a fresh token",
            );
            if let Some(revocation) = &caller.revocation {
                revocation.refused();
            }
            let reply = dialect.error(Some(&id), &error);
            refused(id, reply)
        }
        Incoming::Request { id, .. } if draining => {
            let reply = dialect.shutting_down(&id);
            refused(id, reply)
        }
        Incoming::Request {
            id,
            method,
            params,
            // (Borrowed, not moved: the call's reading is large.)
            ref call,
        } => {
            // The clock is read only when trace lines need it.
            let started = shared.trace_on().then(Instant::now);
            let serving = Serving {
                shared,
                dialect,
                id,
                method: &method,
                started,
                traced,
            };
            serve(serving, phase, params, call.as_ref(), caller)
        }
        Incoming::Notification { method, params } => {
            // (A 2026-07-28 request may be cancelled on a connection that
            // never initialized.)
            if !phase.hears_notifications() && !dialect.hears_before_handshake(&method) {
                tracing::debug!(%method, "notification before initialize dropped");
                return Dispatched::Nothing;
            }
            match dialect.control(&method, params) {
                Control::Initialized => Dispatched::Effect(Effect::Ready),
                Control::Cancel(id) => Dispatched::Effect(Effect::Cancel(id)),
                Control::SetTrace(value) => Dispatched::Effect(Effect::SetTrace(value)),
                Control::Ignore => Dispatched::Nothing,
            }
        }
        Incoming::Response { id, outcome } => {
            shared.peer.answer(id.as_ref(), outcome);
            Dispatched::Nothing
        }
        Incoming::Invalid { id, reason } => {
            let error = RpcError::invalid_request(reason);
            let known = (id != RequestId::Null).then_some(&id);
            let reply = Some(dialect.error(known, &error));
            Dispatched::Reply(Handled::reply(id, reply))
        }
    }
}

/// A request being served: what its reply and its trace line need.
struct Serving<'s> {
    shared: &'s Arc<Shared>,
    dialect: Dialect,
    id: RequestId,
    method: &'s str,
    /// When it was read, if trace lines need it.
    started: Option<Instant>,
    /// Its span (feature `otel`).
    traced: Traced,
}

impl Serving<'_> {
    /// A reply known at once, with its trace line; its span ends.
    fn answered(self, reply: Reply) -> Handled {
        self.traced.ended(Some(&reply), ToolFailure::default());
        let trace = self
            .shared
            .trace_line(self.method, &self.id, self.started, Some(&reply.bytes));
        Handled {
            trace,
            ..Handled::reply(self.id, Some(reply))
        }
    }

    /// The error reply `error`, with its trace line.
    fn failed(self, error: &RpcError) -> Dispatched {
        let reply = self.dialect.error(Some(&self.id), error);
        Dispatched::Reply(self.answered(reply))
    }

    /// Refused for want of `needed` scopes: the `-32007` reply, with the
    /// scopes for a transport that can still challenge instead.
    fn forbidden(self, needed: &[String]) -> Dispatched {
        let error = RpcError::insufficient_scope(needed);
        let reply = self.dialect.error(Some(&self.id), &error);
        Dispatched::Forbidden(Handled {
            refused: Some(needed.into()),
            ..self.answered(reply)
        })
    }
}

/// A request served by its dialect — admitted by its handshake rules, then
/// `initialize` or the method table: the reply, or the job whose work
/// makes it.
fn serve(
    serving: Serving<'_>,
    phase: Phase,
    params: Option<&RawValue>,
    call: Option<&jsonrpc::ToolCall<'_>>,
    caller: &Caller,
) -> Dispatched {
    let principal = caller.principal.as_deref();
    // A stream outlives the token its POST carried: past its expiry, no
    // request of it is served (docs/oauth.md §3).
    if principal
        .and_then(Principal::expires_at)
        .is_some_and(|at| at <= std::time::SystemTime::now())
    {
        return serving.failed(&RpcError::new(
            ErrorCode::TOKEN_EXPIRED,
            "the access token of this stream has expired: open a new one with a fresh token",
        ));
    }
    let shared = serving.shared;
    let request = Request {
        id: &serving.id,
        method: serving.method,
        params,
        call,
        principal,
    };
    let routed = serving.dialect.route(&**shared, phase, request);
    serving.traced.routed(shared, serving.method, &routed);
    let Routed {
        dialect,
        listing,
        step,
        trace_name,
        captures_causes,
    } = routed;
    let serving = Serving { dialect, ..serving };
    match step {
        Step::Reply(reply) => Dispatched::Reply(serving.answered(reply)),
        Step::Initialized(reply, change) => {
            shared.record(change);
            Dispatched::Effect(Effect::Initialized(serving.answered(reply)))
        }
        Step::Record(reply, change) => {
            // A subscription tells of a resource's changes: it needs what
            // reading it needs.
            if let Change::Subscription { uri, on: true } = &change {
                if let Some(needed) = operation::refused_uri(&listing.catalog, uri, principal) {
                    return serving.forbidden(needed);
                }
                if let Err(error) = take_subscription(shared, uri) {
                    return serving.failed(&error);
                }
            }
            shared.record(change);
            Dispatched::Reply(serving.answered(reply))
        }
        Step::Run {
            work,
            progress,
            round,
            as_task,
        } => {
            // What the request holds while in flight: its params' text
            // (not counted where nobody can be counted against: stdio).
            let bytes = if caller.may_be_counted() {
                params.map_or(0, |p| p.get().len())
                    + call.and_then(|c| c.arguments).map_or(0, |a| a.get().len())
            } else {
                0
            };
            let planned = Planned {
                bytes,
                as_task,
                listing,
                work,
                progress,
                round,
                trace_name,
                captures_causes,
            };
            run(serving, caller, planned)
        }
        Step::Listen(filter) => {
            let listening = Listening {
                id: serving.id,
                filter: *filter,
                listing,
                started: serving.started,
            };
            Dispatched::Run(Job::listening(listening, caller))
        }
    }
}

/// What a request's job is made of: the items it was dispatched with,
/// its work, its progress token, its round (2026-07-28), and what its
/// dialect said of it ([`Routed`]).
struct Planned {
    /// The request's size, counted against its principal while in flight.
    bytes: usize,
    as_task: bool,
    listing: Arc<Listing>,
    work: crate::engine::Work,
    progress: Option<Box<RawValue>>,
    round: Option<Arc<crate::round_trip::RoundTrip>>,
    trace_name: &'static str,
    captures_causes: bool,
}

/// The job of a request whose reply needs work (one place makes jobs, so
/// that making one is inlined here), or its refusal for want of scopes.
fn run(serving: Serving<'_>, caller: &Caller, planned: Planned) -> Dispatched {
    let catalog = &planned.listing.catalog;
    if let Some(principal) = caller.principal.as_deref()
        && let Some(needed) = operation::refused(catalog, &planned.work, principal)
    {
        return serving.forbidden(needed);
    }
    // (A small request is not counted: one comparison on the hot path.)
    let reserved = if planned.bytes < COUNTED_FROM {
        None
    } else {
        match reserve_in_flight(serving.shared, caller, planned.bytes, serving.dialect) {
            Ok(reserved) => reserved,
            Err(error) => return serving.failed(&error),
        }
    };
    if planned.as_task {
        let start = super::task::Start {
            listing: planned.listing,
            work: planned.work,
            round: planned.round,
            parent: serving.traced.span().cloned(),
        };
        let mut job = super::task::starting(serving.shared, serving.id, start, caller);
        if let Some(reserved) = reserved {
            job.hold(reserved);
        }
        return Dispatched::Run(job);
    }
    let run = Run {
        dialect: serving.dialect,
        progress: planned.progress,
        started: serving.started,
        round: planned.round,
        trace_name: planned.trace_name,
        captures_causes: planned.captures_causes,
        traced: serving.traced,
    };
    let mut job = Job::new(
        serving.shared,
        planned.listing,
        serving.id,
        planned.work,
        run,
        caller,
    );
    if let Some(reserved) = reserved {
        job.hold(reserved);
    }
    Dispatched::Run(job)
}

/// Reserves a large request's bytes against its caller while it is in
/// flight (`max_in_flight_bytes_per_principal`), or says why it may not
/// run.
#[cold]
#[inline(never)]
fn reserve_in_flight(
    shared: &Shared,
    caller: &Caller,
    bytes: usize,
    dialect: Dialect,
) -> Result<Option<Box<Reservation>>, RpcError> {
    let server = &shared.server;
    let most = server.limits.max_in_flight_bytes;
    match server
        .in_flight
        .reserve(|| CountedAs::of(caller), bytes, most)
    {
        Ok(reserved) => Ok(reserved.map(Box::new)),
        Err(why) => Err(dialect.too_much_in_flight(&why)),
    }
}

/// What became of a message served alone (without a session): an MCP
/// v1.0 single exchange's, or a 2026-07-28 request's.
pub(crate) enum Alone {
    /// Answered at once: the reply, if the message gets one.
    Answered(Option<Reply>),
    /// Its work goes on: it needs a session to finish in
    /// (`Session::run_dispatched`).
    Running(Job),
    /// A listen stream (2026-07-28), not registered yet: a transport that
    /// can stream it makes its [`Listener`](super::listen::Listener), which
    /// the response body reads.
    Listening(Listening),
    /// Refused for want of scopes: the JSON-RPC error reply, and the
    /// scopes the request needs (for a `403` challenge).
    Forbidden(Reply, Box<[String]>),
}

/// Takes a subscription within the session's bounds
/// (`max_uri_length`, `max_subscriptions`), or says which it would pass.
fn take_subscription(shared: &Shared, uri: &str) -> Result<(), RpcError> {
    let limits = &shared.server.limits;
    if uri.len() > limits.max_uri_length {
        return Err(RpcError::invalid_params(format!(
            "the URI is {} bytes long, over the limit of {} bytes for a subscription \
             (max_uri_length)",
            uri.len(),
            limits.max_uri_length
        )));
    }
    if !shared
        .subscriptions
        .add_within(uri, limits.max_subscriptions)
    {
        return Err(RpcError::invalid_params(format!(
            "this session holds {} subscriptions, the most it may (max_subscriptions): \
             unsubscribe from one first",
            limits.max_subscriptions
        )));
    }
    Ok(())
}

/// Serves the one message of an implicit session without building the
/// session — its outbox channel, its slots, its state: an MCP v1.0
/// single exchange, or a 2026-07-28 request (which has no session at
/// all), over HTTP or from `Server::serve_message`. It is [`dispatch`]
/// in the implicit phase, and a job by the executor policy. Only a job
/// that does not finish on its first poll (or may block) needs a session
/// to finish in. `shared` is the server's
/// [`Shared::sessionless`] state for that kind of request, which no request
/// changes: effects are not applied (an implicit session that ends after
/// one message would drop them unseen), and nothing such a request does
/// reads or changes a session's state (its trace level, its cancel
/// registry and its outbox are for notifications, batches and work that
/// waits). The caller checks that shutdown has not begun.
pub(crate) fn alone(shared: &Arc<Shared>, message: Incoming<'_>, caller: &Caller) -> Alone {
    let handled = match dispatch(shared, Phase::Implicit, false, message, caller) {
        Dispatched::Forbidden(handled) => {
            let needed = handled.refused.unwrap_or_default();
            return Alone::Forbidden(handled.reply.unwrap_or_default(), needed);
        }
        Dispatched::Nothing
        | Dispatched::Effect(Effect::Ready | Effect::Cancel(_) | Effect::SetTrace(_)) => {
            return Alone::Answered(None);
        }
        Dispatched::Reply(handled) | Dispatched::Effect(Effect::Initialized(handled)) => handled,
        // A listen stream is no work to poll: the transport runs it.
        Dispatched::Run(job) if job.is_listen() => match job.into_listening() {
            Ok(listening) => return Alone::Listening(listening),
            Err(job) => return Alone::Running(job),
        },
        Dispatched::Run(job) => match job.poll_once(shared) {
            Ok(handled) => handled,
            Err(job) => return Alone::Running(job),
        },
    };
    // The sessionless state never traces, and MCP v1.0 sends the changes a
    // request fires to every session alike, not as caused by it.
    debug_assert!(handled.trace.is_none() && handled.caused.is_empty());
    Alone::Answered(handled.reply)
}

/// Runs `job` in a task of its own; its reply goes to the session's output,
/// then its slot is freed.
pub(crate) fn run_in_task(shared: &Arc<Shared>, job: Job, slot: Option<Slot<'static>>) {
    let running = job.registered(shared);
    let shared = shared.clone();
    tokio::spawn(async move {
        let handled = running.await;
        shared.send_handled(handled).await;
        drop(slot);
    });
}

/// One request of a running session served beside its reader (a
/// Streamable HTTP POST).
#[cfg(feature = "http")]
pub(crate) enum Beside {
    /// Answered at once, with nothing sent meanwhile: the reply, for the
    /// caller to return itself.
    Answered(Reply),
    /// Its reply (after whatever it sent first) goes out through the
    /// session's output, as the reader's replies do.
    Sent,
    /// Not served here: hand it to the reader.
    Not,
    /// Refused for want of scopes, with nothing sent: the JSON-RPC error
    /// reply, and the scopes the request needs (for a `403` challenge).
    Forbidden(Reply, Box<[String]>),
}

/// Serves one request of a running session on the caller's task instead
/// of the session's reader — no hand-over to the reader and no second
/// parse — when it can: the handshake is done, no request is parked (this
/// one would overtake it) and a slot is free. It is then [`dispatch`]ed in
/// the ready phase and run by the executor policy, exactly as on the
/// reader (so its admission is decided in one place). A reply known at once, or work that ends on its first poll,
/// is answered to the caller when nothing at all was sent meanwhile (so
/// nothing can have come before the reply); anything else goes out through
/// the session's output, in order, like the reader's replies — from a task
/// of its own, which the caller going away cannot stop. `stopping` says
/// whether the session began to shut down: checked again once the slot is
/// taken, so that a request the reader's drain can no longer see is left
/// to the reader (which answers it as shutdown requires).
#[cfg(feature = "http")]
pub(crate) async fn beside(
    shared: &Arc<Shared>,
    stopping: impl Fn() -> bool,
    message: Incoming<'_>,
    caller: &Caller,
) -> Beside {
    // Only a request is taken here, and only while nothing it could
    // overtake waits; the reader serves anything else.
    if !shared.is_ready() || !matches!(message, Incoming::Request { .. }) {
        return Beside::Not;
    }
    let Some(slot) = shared
        .slots
        .take_in_order(shared.parked())
        .filter(|_| !stopping())
        .map(Slot::owned)
    else {
        return Beside::Not;
    };
    let before = shared.sent();
    let mut handled = match dispatch(shared, Phase::Ready, false, message, caller) {
        // (A ready session's `initialize` is refused, so no request here
        // initializes one.)
        Dispatched::Reply(handled) | Dispatched::Effect(Effect::Initialized(handled)) => handled,
        Dispatched::Forbidden(handled) if handled.trace.is_none() => {
            let needed = handled.refused.unwrap_or_default();
            return Beside::Forbidden(handled.reply.unwrap_or_default(), needed);
        }
        Dispatched::Forbidden(handled) => handled,
        Dispatched::Run(job) => match job.poll_once(shared) {
            Ok(handled) => handled,
            Err(job) => {
                run_in_task(shared, job, Some(slot));
                return Beside::Sent;
            }
        },
        // Only notifications and responses dispatch to these, and a
        // request was checked for above.
        Dispatched::Nothing | Dispatched::Effect(_) => {
            return Beside::Answered(Reply::default());
        }
    };
    let quiet = shared.sent() == before && handled.caused.is_empty() && handled.trace.is_none();
    if quiet && let Some(reply) = handled.reply.take() {
        return Beside::Answered(reply);
    }
    let shared = shared.clone();
    tokio::spawn(async move {
        shared.send_handled(handled).await;
        drop(slot);
    });
    Beside::Sent
}
