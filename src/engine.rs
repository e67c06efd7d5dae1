//! The engine: the registry of compiled items ([`catalog`]), schema
//! validation ([`validate`], with the fast path's quick check of JSON
//! text), and the
//! neutral operations every dialect maps its methods onto
//! ([`operation`]: [`Work`] that ends in [`Done`] or a [`Failure`]).
//!
//! [`access`] says which OAuth scopes each item needs.
//!
//! Nothing here knows a dialect, a session or a transport.

pub(crate) mod access;
pub(crate) mod catalog;
pub(crate) mod operation;
#[cfg(test)]
mod quick_check_tests;
pub(crate) mod validate;

pub(crate) use catalog::{Catalog, CompletionRef};
pub(crate) use operation::{Arguments, Done, Failure, TaskOp, TaskWork, Work};
