//! Placeholder: replaced by the richer MCP Apps example.
fn main() {}
