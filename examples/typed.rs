//! Typed tools: the argument and output types derive their JSON Schemas
//! (doc comments become descriptions), the arguments are validated and
//! deserialised before the function runs, and its output is serialised and
//! checked after.
//!
//! Run: `cargo run --example typed` (stdio), then ask for `mcp/listTools` to
//! see the derived schemas.

use std::time::Duration;

use clawmcp::typed_tool;
use clawmcp::{Server, ToolContext, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A temperature scale.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Degrees Celsius.
    Celsius,
    /// Degrees Fahrenheit.
    Fahrenheit,
    /// Kelvin.
    Kelvin,
}

/// Arguments of the `convert` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)] // "additionalProperties": false
pub struct Convert {
    /// The temperature to convert.
    pub value: f64,
    /// The scale `value` is on.
    pub from: Unit,
    /// The scale to convert to; Kelvin when absent.
    pub to: Option<Unit>,
}

/// The result of the `convert` tool.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Converted {
    /// The converted temperature.
    pub value: f64,
    /// Its scale.
    pub unit: Unit,
}

/// Converts between temperature scales.
pub async fn convert(args: Convert) -> Result<Converted, ToolError> {
    let kelvin = match args.from {
        Unit::Celsius => args.value + 273.15,
        Unit::Fahrenheit => (args.value - 32.0) * 5.0 / 9.0 + 273.15,
        Unit::Kelvin => args.value,
    };
    if kelvin < 0.0 {
        return Err(ToolError::new(format!(
            "{} {:?} is below absolute zero",
            args.value, args.from
        )));
    }
    let unit = args.to.unwrap_or(Unit::Kelvin);
    let value = match unit {
        Unit::Celsius => kelvin - 273.15,
        Unit::Fahrenheit => (kelvin - 273.15) * 9.0 / 5.0 + 32.0,
        Unit::Kelvin => kelvin,
    };
    Ok(Converted { value, unit })
}

/// Arguments of the `countdown` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Countdown {
    /// Seconds to count down from (at most 10).
    #[schemars(range(max = 10))]
    pub seconds: u32,
}

/// The result of the `countdown` tool.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Done {
    /// How many seconds were counted.
    pub counted: u32,
}

/// Counts down a second at a time; stops early when the client cancels.
pub async fn countdown(args: Countdown, ctx: ToolContext) -> Result<Done, ToolError> {
    for left in (1..=args.seconds).rev() {
        tracing::info!(parent: ctx.span(), left, "counting down");
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            () = ctx.cancelled() => return Err(ToolError::new("cancelled")),
        }
    }
    Ok(Done {
        counted: args.seconds,
    })
}

/// The example's server: two typed tools.
pub fn server() -> Result<Server, clawmcp::BuildError> {
    Server::builder()
        .name("typed")
        .tool(typed_tool(
            "mcp://clawmcp/examples/typed/tools/convert:v1",
            "convert",
            "Converts a temperature between Celsius, Fahrenheit and Kelvin.",
            convert,
        ))
        .tool(
            typed_tool(
                "mcp://clawmcp/examples/typed/tools/countdown:v1",
                "countdown",
                "Counts down from `seconds`, one second at a time.",
                countdown,
            )
            .with_time_limit(Duration::from_secs(15)),
        )
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    server()?.serve_stdio().await?;
    Ok(())
}
