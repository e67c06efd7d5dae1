//! What a server serves right now: its compiled items ([`Catalog`]) and
//! each dialect's lists serialised from them, as one immutable [`Listing`]
//! that the server replaces whole when an item is added or removed at run
//! time ([`ServerHandle::add_tool`](crate::ServerHandle::add_tool) and the
//! like).
//!
//! A request reads the listing once, when it is dispatched, and its job
//! keeps that listing to its end: every index into the catalog it holds
//! names the same item throughout, and a tool removed while it runs
//! finishes its call.
//!
//! The handle's edit methods live here, a layer above the handle: they
//! compile what the handle cannot name.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use arc_swap::ArcSwap;
use serde_json::{Map, Value};

use super::{Listing, Providers, ServerInner, model_context, revision_2026, v1};
use crate::definition::ServerInfo;
use crate::engine::Catalog;
use crate::engine::access::AccessRules;
use crate::engine::catalog::{Items, RegisteredTool};
use crate::error::BuildError;
use crate::handle::{ListKind, Served, ServerHandle};
use crate::prompt::Prompt;
use crate::resource::Resource;
use crate::state::States;
use crate::tool::Tool;

/// An edit of a built server's items.
enum Edit {
    AddTool {
        tool: RegisteredTool,
        model_context_only: bool,
    },
    /// By name or mcpId.
    RemoveTool(String),
    AddPrompt(Arc<dyn Prompt>),
    /// By name or mcpId.
    RemovePrompt(String),
    AddResource(Arc<dyn Resource>),
    /// By URI (mcpId).
    RemoveResource(String),
}

/// Adding and removing items at run time (docs/model-context.md §6.1).
impl ServerHandle {
    /// Applies an edit to the built server and announces the list it
    /// changed.
    fn edit(&self, edit: Edit) -> Result<bool, BuildError> {
        let server = self
            .served()?
            .into_any()
            .downcast::<ServerInner>()
            .map_err(|_| BuildError::NotBuilt)?;
        let changed = server.apply(edit)?;
        if let Some(list) = changed {
            self.announce_list(list);
        }
        Ok(changed.is_some())
    }

    /// Adds a tool to the running server, for both protocols (as
    /// [`ServerBuilder::tool`](crate::ServerBuilder::tool)): it is checked
    /// and compiled as `build` would, and every session that can hear it is
    /// told the tool list changed (`notifications/tools/list_changed` to
    /// Model Context Protocol sessions and to 2026-07-28 listen streams
    /// that opted in; MCP v1.0 has no such notification, and its next
    /// `mcp/listTools` shows the tool). Refused, with nothing changed, as
    /// `build` would refuse it (a taken name or mcpId, a bad schema), or
    /// when the server is not built yet.
    ///
    /// Requests already running keep the items they started with: a call
    /// of a tool removed meanwhile finishes.
    ///
    /// ```
    /// use clawmcp::definition::ToolDefinition;
    /// use clawmcp::{Server, ToolContext, tool_fn};
    /// use serde_json::{Value, json};
    ///
    /// let server = Server::builder().tools_provider(true).build().unwrap();
    /// let echo = tool_fn(
    ///     ToolDefinition {
    ///         mcp_id: "mcp://example/tools/echo:v1".into(),
    ///         name: "echo".into(),
    ///         description: "Echoes its arguments.".into(),
    ///         input_schema: json!({"type": "object"}),
    ///         output_schema: json!({"type": "object"}),
    ///     },
    ///     |args: Value, _: ToolContext| async move { Ok(args) },
    /// );
    /// server.handle().add_tool(echo).unwrap();
    /// assert!(server.handle().remove_tool("echo").unwrap());
    /// assert!(!server.handle().remove_tool("echo").unwrap());
    /// ```
    pub fn add_tool(&self, tool: impl Tool) -> Result<(), BuildError> {
        self.edit(Edit::AddTool {
            tool: RegisteredTool::new(tool),
            model_context_only: false,
        })
        .map(drop)
    }

    /// Adds a tool only the Model Context Protocol lists and calls (as
    /// [`ServerBuilder::model_context_tool`](crate::ServerBuilder::model_context_tool)),
    /// announced as [`add_tool`](Self::add_tool) announces.
    pub fn add_model_context_tool(&self, tool: impl Tool) -> Result<(), BuildError> {
        self.edit(Edit::AddTool {
            tool: RegisteredTool::new(tool),
            model_context_only: true,
        })
        .map(drop)
    }

    /// Removes the tool with this name or mcpId: `Ok(true)` when there was
    /// one (the change is announced as [`add_tool`](Self::add_tool)'s is),
    /// `Ok(false)` when there was none. Scopes required of it
    /// ([`ServerBuilder::require_scopes`](crate::ServerBuilder::require_scopes))
    /// stay, and apply again to a tool added by that name.
    pub fn remove_tool(&self, name: &str) -> Result<bool, BuildError> {
        self.edit(Edit::RemoveTool(name.to_owned()))
    }

    /// Adds a prompt (as [`ServerBuilder::prompt`](crate::ServerBuilder::prompt)),
    /// announced as `notifications/prompts/list_changed`.
    pub fn add_prompt(&self, prompt: impl Prompt) -> Result<(), BuildError> {
        self.edit(Edit::AddPrompt(Arc::new(prompt))).map(drop)
    }

    /// Removes the prompt with this name or mcpId (`Ok(false)`: none).
    pub fn remove_prompt(&self, name: &str) -> Result<bool, BuildError> {
        self.edit(Edit::RemovePrompt(name.to_owned()))
    }

    /// Adds a resource (as [`ServerBuilder::resource`](crate::ServerBuilder::resource)),
    /// announced as `notifications/resources/list_changed`.
    pub fn add_resource(&self, resource: impl Resource) -> Result<(), BuildError> {
        self.edit(Edit::AddResource(Arc::new(resource))).map(drop)
    }

    /// Removes the resource with this URI (mcpId) (`Ok(false)`: none).
    /// Sessions subscribed to it stay subscribed, and hear of it again if
    /// a resource with that URI is added.
    pub fn remove_resource(&self, uri: &str) -> Result<bool, BuildError> {
        self.edit(Edit::RemoveResource(uri.to_owned()))
    }
}

/// The items as registered and the settings a listing is compiled with:
/// kept, so that an edit compiles the next listing from them.
#[derive(Clone)]
pub(crate) struct Blueprint {
    pub(crate) items: Items,
    pub(crate) access: AccessRules,
    pub(crate) tool_time_limit: Option<Duration>,
    /// The Model Context Protocol is served (its naming rules apply).
    pub(crate) model_context: bool,
    /// The capabilities announced, with or without items: at build, every
    /// kind the server has items of is added, so that a list emptied at
    /// run time keeps its capability.
    pub(crate) providers: Providers,
    pub(crate) instructions: Option<String>,
    pub(crate) page_size: usize,
    pub(crate) extensions: Map<String, Value>,
}

impl Blueprint {
    /// Compiles the listing. `strict` at build: a scope rule or a
    /// completer that names no item is then refused (a typo that would
    /// leave an item open); after an edit it is kept, dormant, and applies
    /// again to an item added by that name.
    pub(crate) fn compile(
        &self,
        info: &ServerInfo,
        states: &States,
        strict: bool,
    ) -> Result<Listing, BuildError> {
        let catalog = Catalog::build(
            self.items.clone(),
            self.tool_time_limit,
            self.model_context,
            states,
            self.access.clone(),
            strict,
        )?;
        let v1 = v1::Lists::build(&catalog, self.providers, info);
        let model_context = model_context::Lists::build(
            &catalog,
            self.providers,
            info,
            self.instructions.as_deref(),
            self.page_size,
            &self.extensions,
        );
        let mirrors = revision_2026::mirror::Mirrors::build(&catalog, self.model_context)?;
        Ok(Listing {
            catalog,
            v1,
            model_context,
            mirrors,
        })
    }

    /// Applies `edit` to the items: the list it changes, or `None` when it
    /// removes nothing.
    fn edit(&mut self, edit: Edit) -> Option<ListKind> {
        let items = &mut self.items;
        match edit {
            Edit::AddTool {
                tool,
                model_context_only,
            } => {
                if model_context_only {
                    items.by_name_only.push(items.tools.len());
                }
                items.tools.push(tool);
                Some(ListKind::Tools)
            }
            Edit::RemoveTool(name) => {
                let index = items.tools.iter().position(|t| {
                    let definition = t.tool.definition();
                    definition.name == name || definition.mcp_id == name
                })?;
                items.tools.remove(index);
                items.by_name_only.retain(|&i| i != index);
                for i in &mut items.by_name_only {
                    if *i > index {
                        *i -= 1;
                    }
                }
                Some(ListKind::Tools)
            }
            Edit::AddPrompt(prompt) => {
                items.prompts.push(prompt);
                Some(ListKind::Prompts)
            }
            Edit::RemovePrompt(name) => {
                let index = items.prompts.iter().position(|p| {
                    let definition = p.definition();
                    definition.name == name || definition.mcp_id == name
                })?;
                items.prompts.remove(index);
                Some(ListKind::Prompts)
            }
            Edit::AddResource(resource) => {
                items.resources.push(resource);
                Some(ListKind::Resources)
            }
            Edit::RemoveResource(uri) => {
                let index = items
                    .resources
                    .iter()
                    .position(|r| r.info().mcp_id == uri)?;
                items.resources.remove(index);
                Some(ListKind::Resources)
            }
        }
    }
}

/// The listing a server serves now, and the blueprint of the next.
pub(crate) struct Listings {
    current: ArcSwap<Listing>,
    /// Held while an edit compiles and swaps: edits apply one at a time.
    blueprint: Mutex<Blueprint>,
}

impl Listings {
    pub(crate) fn new(listing: Listing, blueprint: Blueprint) -> Self {
        Self {
            current: ArcSwap::from_pointee(listing),
            blueprint: Mutex::new(blueprint),
        }
    }

    /// The listing served now; a request keeps the one it was dispatched
    /// with.
    pub(crate) fn current(&self) -> Arc<Listing> {
        self.current.load_full()
    }
}

impl ServerInner {
    /// Applies `edit`: the list it changed, `None` when there was nothing
    /// to remove, or why the items it would leave cannot be served (then
    /// nothing changed).
    fn apply(&self, edit: Edit) -> Result<Option<ListKind>, BuildError> {
        let mut blueprint = self
            .listings
            .blueprint
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let added = match &edit {
            Edit::AddResource(resource) => Some(resource.clone()),
            _ => None,
        };
        let mut next = blueprint.clone();
        let Some(kind) = next.edit(edit) else {
            return Ok(None);
        };
        let listing = next.compile(&self.info, self.handle.states(), false)?;
        if let Some(resource) = added {
            resource.bind(&self.handle);
        }
        self.listings.current.store(Arc::new(listing));
        *blueprint = next;
        Ok(Some(kind))
    }
}

impl Served for ServerInner {
    fn lists_resource(&self, uri: &str) -> bool {
        self.listings
            .current
            .load()
            .catalog
            .resource_index
            .contains_key(uri)
    }

    fn resource_uris(&self) -> Vec<String> {
        self.listing()
            .catalog
            .resource_index
            .keys()
            .cloned()
            .collect()
    }

    fn mirror(&self, uri: &str, content: &str) -> bool {
        let listing = self.listing();
        let catalog = &listing.catalog;
        let Some((_, resource)) =
            (catalog.resource_index.get(uri)).and_then(|&i| catalog.resources.get(i))
        else {
            return false;
        };
        resource.mirror(content);
        true
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}
