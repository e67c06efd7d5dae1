//! What the server sends its client on a tool's behalf, in this protocol:
//! progress, log lines, the notice that it stopped waiting for an answer,
//! and the methods of its requests (elicitation, sampling, roots). The
//! session's client link decides when; this decides the bytes.

use serde::Serialize;
use serde_json::value::RawValue;

use super::methods;
use crate::client::LogLevel;
use crate::jsonrpc::encode_notification;
use crate::tool::ClientRequest;

/// The bytes this protocol sends its client on a tool's behalf.
pub(crate) static MESSAGES: crate::dialect::ToClient = crate::dialect::ToClient {
    progress,
    log_line,
    stopped_waiting,
    method,
};

/// `notifications/progress` for the request whose token is `token`.
pub(crate) fn progress(
    token: &RawValue,
    progress: f64,
    total: Option<f64>,
    message: Option<&str>,
) -> Vec<u8> {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Params<'a> {
        progress_token: &'a RawValue,
        progress: f64,
        #[serde(skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<&'a str>,
    }
    let params = Params {
        progress_token: token,
        progress,
        total,
        message,
    };
    encode_notification(methods::PROGRESS, &params)
}

/// `notifications/message`: a tool's log line.
pub(crate) fn log_line(level: LogLevel, data: Box<RawValue>) -> Vec<u8> {
    #[derive(Serialize)]
    struct Params {
        level: LogLevel,
        logger: &'static str,
        data: Box<RawValue>,
    }
    let params = Params {
        level,
        logger: "tool",
        data,
    };
    encode_notification(methods::MESSAGE, &params)
}

/// `notifications/cancelled` for the server's own request `id`, whose
/// answer it no longer waits for.
pub(crate) fn stopped_waiting(id: u64) -> Vec<u8> {
    encode_notification(
        methods::CANCELLED,
        &serde_json::json!({"requestId": id, "reason": "the server stopped waiting"}),
    )
}

/// The method of a request to the client (the request names its own:
/// `ClientRequest::method`).
pub(crate) fn method(request: ClientRequest) -> &'static str {
    request.method()
}
