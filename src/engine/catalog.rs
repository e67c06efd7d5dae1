//! Everything a server serves, checked and compiled once by
//! [`ServerBuilder::build`](crate::ServerBuilder::build): tools with their
//! validators, resources, resource templates, prompts and completers,
//! indexed by what each dialect looks them up by. Dialect-neutral: each
//! dialect builds its own cached lists from it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use jsonschema::Validator;

use super::access::{Access, AccessRules, is_scope_token};
use super::validate;
use crate::completion::Complete;
use crate::definition::{Presentation, PromptDefinition, ToolDefinition, ToolMetadata};
use crate::error::BuildError;
use crate::fast::quick_check::QuickCheck;
use crate::id_hash::IdHasher;
use crate::prompt::{Prompt, PromptArgument};
use crate::resource::{Resource, ResourceInfo};
use crate::template::{ResourceTemplate, Variables};
use crate::tool::Tool;

/// A registered tool with its compiled schemas.
pub(crate) struct CompiledTool {
    pub(crate) definition: ToolDefinition,
    /// Its title, annotations and icons.
    pub(crate) metadata: ToolMetadata,
    /// It is found by its mcpId (in `tool_index`): false for a tool only
    /// the protocols that find tools by name list and call.
    pub(crate) by_id: bool,
    pub(crate) tool: Arc<dyn Tool>,
    /// The same tool as a typed tool, which the fast path calls with its
    /// arguments' JSON text.
    #[cfg(feature = "schemars")]
    pub(crate) typed: Option<Arc<crate::typed::TypedTool>>,
    pub(crate) time_limit: Option<Duration>,
    pub(crate) may_block: bool,
    /// Whether a call may run as a task.
    pub(crate) task_support: crate::task::TaskSupport,
    pub(crate) input: Validator,
    pub(crate) output: Validator,
    /// The input schema's quick check, for a tool that reads its arguments
    /// as JSON text (a typed tool), when the schema is in the
    /// quick check's subset.
    pub(crate) quick_input: Option<QuickCheck>,
    /// The output schema's quick check, for structured output sent as the
    /// tool serialised it.
    pub(crate) quick_output: Option<QuickCheck>,
    /// Its `outputSchema` is an object schema: the Model Context Protocol
    /// lists it and sends `structuredContent`.
    pub(crate) lists_output: bool,
}

impl CompiledTool {
    pub(crate) fn mcp_id(&self) -> &str {
        &self.definition.mcp_id
    }
}

/// A registered prompt.
pub(crate) struct CompiledPrompt {
    pub(crate) definition: PromptDefinition,
    /// Its title and icons.
    pub(crate) presentation: Presentation,
    pub(crate) arguments: Vec<PromptArgument>,
    pub(crate) prompt: Arc<dyn Prompt>,
}

/// What `completion/complete` can name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum CompletionRef {
    /// A prompt's argument: (prompt name, argument).
    Prompt(String, String),
    /// A template's variable: (URI template, variable).
    Template(String, String),
}

/// A tool as registered: the tool, and for a typed tool the same tool as
/// the fast path calls it, with its arguments' JSON text.
#[derive(Clone)]
pub(crate) struct RegisteredTool {
    pub(crate) tool: Arc<dyn Tool>,
    #[cfg(feature = "schemars")]
    pub(crate) typed: Option<Arc<crate::typed::TypedTool>>,
}

impl RegisteredTool {
    /// `tool`, recognised as a typed tool while its type is known.
    pub(crate) fn new<T: Tool>(tool: T) -> Self {
        let tool = Arc::new(tool);
        Self {
            #[cfg(feature = "schemars")]
            typed: (tool.clone() as Arc<dyn std::any::Any + Send + Sync>)
                .downcast()
                .ok(),
            tool,
        }
    }
}

/// The items, as registered.
#[derive(Clone)]
pub(crate) struct Items {
    pub(crate) tools: Vec<RegisteredTool>,
    /// The indices in `tools` of tools found by name only (not by
    /// mcpId).
    pub(crate) by_name_only: Vec<usize>,
    pub(crate) resources: Vec<Arc<dyn Resource>>,
    pub(crate) templates: Vec<ResourceTemplate>,
    pub(crate) prompts: Vec<Arc<dyn Prompt>>,
    pub(crate) prompt_completers: Vec<(String, String, Arc<dyn Complete>)>,
}

/// Every item, checked, compiled and indexed.
pub(crate) struct Catalog {
    pub(crate) tools: Vec<CompiledTool>,
    /// Tools by mcpId (MCP v1.0).
    pub(crate) tool_index: HashMap<String, usize, IdHasher>,
    /// Tools by name (Model Context Protocol).
    pub(crate) tool_names: HashMap<String, usize, IdHasher>,
    pub(crate) resources: Vec<(ResourceInfo, Arc<dyn Resource>)>,
    /// Resources by URI (mcpId).
    pub(crate) resource_index: HashMap<String, usize, IdHasher>,
    pub(crate) templates: Vec<ResourceTemplate>,
    pub(crate) prompts: Vec<CompiledPrompt>,
    /// Prompts by name (Model Context Protocol).
    pub(crate) prompt_names: HashMap<String, usize, IdHasher>,
    pub(crate) completers: HashMap<CompletionRef, Arc<dyn Complete>>,
    /// The scopes each item needs.
    pub(crate) access: Access,
}

impl Catalog {
    /// Checks every item (docs/mcp-v1.md §6: absolute, unique mcpIds; valid
    /// schemas, the input schema an object schema; docs/model-context.md §3 when
    /// `strict_names` is on: tool names `[A-Za-z0-9_.-]{1,128}`, unique
    /// tool, prompt and template names) and compiles the schemas.
    /// `strict`: a scope rule or a prompt completer that names no item is
    /// refused; otherwise it is left out (an item removed at run time).
    pub(crate) fn build(
        items: Items,
        default_time_limit: Option<Duration>,
        strict_names: bool,
        states: &crate::state::States,
        access: AccessRules,
        strict: bool,
    ) -> Result<Self, BuildError> {
        let mut tools = Vec::with_capacity(items.tools.len());
        let mut tool_index = HashMap::default();
        let mut tool_names = HashMap::default();
        // The mcpIds of tools found by name only: unique all the same.
        let mut unlisted_ids = HashSet::new();
        for (index, registered) in items.tools.into_iter().enumerate() {
            let tool = registered.tool;
            // A typed tool reads its arguments from their JSON text.
            #[cfg(feature = "schemars")]
            let (typed, reads_text) = (registered.typed.clone(), registered.typed.is_some());
            #[cfg(not(feature = "schemars"))]
            let reads_text = false;
            let by_id = !items.by_name_only.contains(&index);
            let definition = tool.definition();
            let id = &definition.mcp_id;
            check_id(
                "tool",
                id,
                tool_index.contains_key(id) || unlisted_ids.contains(id),
            )?;
            check_text("tool", id, "name", &definition.name)?;
            check_text("tool", id, "description", &definition.description)?;
            if strict_names {
                check_tool_name(&definition.name, tool_names.contains_key(&definition.name))?;
            }
            if let Some(missing) = tool.needs_state().into_iter().find(|ty| !states.has(*ty)) {
                return Err(BuildError::MissingState {
                    mcp_id: id.clone(),
                    state: missing.name(),
                });
            }
            validate::require_object_schema(id, &definition.input_schema)?;
            let input = validate::compile(id, "inputSchema", &definition.input_schema)?;
            let output = validate::compile(id, "outputSchema", &definition.output_schema)?;
            if by_id {
                tool_index.insert(id.clone(), tools.len());
            } else {
                unlisted_ids.insert(id.clone());
            }
            tool_names.insert(definition.name.clone(), tools.len());
            tools.push(CompiledTool {
                lists_output: validate::is_object_schema(&definition.output_schema),
                time_limit: tool.time_limit().or(default_time_limit),
                may_block: tool.may_block(),
                task_support: tool.task_support(),
                quick_input: quick_check(&definition.input_schema).filter(|_| reads_text),
                quick_output: quick_check(&definition.output_schema),
                metadata: tool.metadata(),
                by_id,
                tool,
                #[cfg(feature = "schemars")]
                typed,
                input,
                output,
                definition,
            });
        }

        let mut resources = Vec::with_capacity(items.resources.len());
        let mut resource_index = HashMap::default();
        for resource in items.resources {
            let info = resource.info();
            check_id(
                "resource",
                &info.mcp_id,
                resource_index.contains_key(&info.mcp_id),
            )?;
            check_text("resource", &info.mcp_id, "name", &info.name)?;
            check_text("resource", &info.mcp_id, "mediaType", &info.media_type)?;
            // (A host renders a page of the app media type only at a
            // `ui://` URI; an `AppResource` checks it too.)
            if info.media_type == crate::app::MIME_TYPE && !info.mcp_id.starts_with("ui://") {
                return Err(BuildError::InvalidApp {
                    uri: info.mcp_id.clone(),
                    problem: format!(
                        "a resource of type {} must have a ui:// URI",
                        crate::app::MIME_TYPE
                    ),
                });
            }
            resource.check()?;
            resource_index.insert(info.mcp_id.clone(), resources.len());
            resources.push((info, resource));
        }
        // A tool's app page is a registered one.
        for tool in &tools {
            let Some(app) = &tool.metadata.app else {
                continue;
            };
            let page = (resource_index.get(&app.resource_uri)).and_then(|&i| resources.get(i));
            if page.is_none_or(|(info, _)| info.media_type != crate::app::MIME_TYPE) {
                return Err(BuildError::InvalidApp {
                    uri: app.resource_uri.clone(),
                    problem: format!(
                        "tool {} links it, and it is no registered app page (an AppResource)",
                        tool.definition.name
                    ),
                });
            }
        }

        let mut completers = HashMap::new();
        let mut template_names = HashSet::new();
        for template in &items.templates {
            let uri = template.template.as_str();
            check_text("resource template", uri, "name", &template.name)?;
            if !template_names.insert(template.template.as_str().to_owned()) {
                return Err(BuildError::InvalidName {
                    kind: "resource template",
                    name: uri.to_owned(),
                    problem: "is registered twice",
                });
            }
            for (variable, completer) in &template.completers {
                if !template.template.variables().any(|v| v == variable) {
                    return Err(BuildError::UnknownCompletionTarget {
                        target: format!("variable {variable:?} of {uri:?}"),
                        problem: "the template has no such variable",
                    });
                }
                completers.insert(
                    CompletionRef::Template(uri.to_owned(), variable.clone()),
                    completer.clone(),
                );
            }
        }

        let mut prompts = Vec::with_capacity(items.prompts.len());
        let mut prompt_ids = HashSet::new();
        let mut prompt_names = HashMap::default();
        for prompt in items.prompts {
            let definition = prompt.definition();
            let id = &definition.mcp_id;
            check_id("prompt", id, prompt_ids.contains(id))?;
            check_text("prompt", id, "name", &definition.name)?;
            prompt.check()?;
            if strict_names && prompt_names.contains_key(&definition.name) {
                return Err(BuildError::InvalidName {
                    kind: "prompt",
                    name: definition.name.clone(),
                    problem: "is the name of another prompt (the Model Context Protocol finds \
                              prompts by name)",
                });
            }
            prompt_ids.insert(id.clone());
            prompt_names.insert(definition.name.clone(), prompts.len());
            prompts.push(CompiledPrompt {
                arguments: prompt.arguments(),
                presentation: prompt.presentation(),
                definition,
                prompt,
            });
        }
        for (prompt_name, argument, completer) in items.prompt_completers {
            let declared = prompt_names
                .get(&prompt_name)
                .and_then(|&i| prompts.get(i))
                .is_some_and(|p: &CompiledPrompt| p.arguments.iter().any(|a| a.name == argument));
            if !declared && !strict {
                continue;
            }
            if !declared {
                return Err(BuildError::UnknownCompletionTarget {
                    target: format!("argument {argument:?} of prompt {prompt_name:?}"),
                    problem: "no prompt of that name declares that argument",
                });
            }
            completers.insert(CompletionRef::Prompt(prompt_name, argument), completer);
        }

        let mut catalog = Self {
            tools,
            tool_index,
            tool_names,
            resources,
            resource_index,
            templates: items.templates,
            prompts,
            prompt_names,
            completers,
            access: Access::default(),
        };
        catalog.access = catalog.resolve(access, strict)?;
        Ok(catalog)
    }

    /// The scopes table of `rules`: every item a rule names gets its
    /// scopes (when `strict`, a name that matches nothing is a typo that
    /// would leave an item open: refused).
    fn resolve(&self, rules: AccessRules, strict: bool) -> Result<Access, BuildError> {
        let empty = |n: usize| vec![Box::<[String]>::default(); n];
        let mut table = [
            empty(self.tools.len()),
            empty(self.resources.len()),
            empty(self.templates.len()),
            empty(self.prompts.len()),
        ];
        for (item, scopes) in &rules.required {
            let scopes: Vec<String> = scopes
                .iter()
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect();
            if let Some(bad) = scopes.iter().find(|s| !is_scope_token(s)) {
                return Err(BuildError::InvalidScope {
                    item: item.clone(),
                    scope: bad.clone(),
                });
            }
            let named: [Vec<usize>; 4] = [
                (self.tools.iter().enumerate())
                    .filter(|(_, t)| t.definition.name == *item || t.definition.mcp_id == *item)
                    .map(|(i, _)| i)
                    .collect(),
                self.resource_index.get(item).copied().into_iter().collect(),
                (self.templates.iter().enumerate())
                    .filter(|(_, t)| t.template.as_str() == item || t.name == *item)
                    .map(|(i, _)| i)
                    .collect(),
                (self.prompts.iter().enumerate())
                    .filter(|(_, p)| p.definition.name == *item || p.definition.mcp_id == *item)
                    .map(|(i, _)| i)
                    .collect(),
            ];
            if strict && named.iter().all(Vec::is_empty) {
                return Err(BuildError::UnknownItem { item: item.clone() });
            }
            for (kind, indexes) in table.iter_mut().zip(named) {
                for i in indexes {
                    let Some(scoped) = kind.get_mut(i) else {
                        continue;
                    };
                    let mut all: Vec<String> = scoped.iter().chain(&scopes).cloned().collect();
                    all.sort();
                    all.dedup();
                    *scoped = all.into();
                }
            }
        }
        Ok(Access::new(table, &rules))
    }

    /// The first template `uri` matches, with its variables.
    pub(crate) fn template_for(&self, uri: &str) -> Option<(&ResourceTemplate, Variables)> {
        self.templates
            .iter()
            .find_map(|t| t.template.matches(uri).map(|v| (t, v)))
    }

    /// Whether `uri` names a resource: a registered one or one a template
    /// matches.
    pub(crate) fn knows_uri(&self, uri: &str) -> bool {
        self.resource_index.contains_key(uri) || self.template_for(uri).is_some()
    }
}

/// docs/mcp-v1.md §6: an mcpId is an absolute URI, unique within its kind.
fn check_id(kind: &'static str, mcp_id: &str, taken: bool) -> Result<(), BuildError> {
    if !is_absolute_uri(mcp_id) {
        return Err(BuildError::MalformedMcpId {
            kind,
            mcp_id: mcp_id.to_owned(),
        });
    }
    if taken {
        return Err(BuildError::DuplicateMcpId {
            kind,
            mcp_id: mcp_id.to_owned(),
        });
    }
    Ok(())
}

/// docs/model-context.md §3: a tool name is `[A-Za-z0-9_.-]{1,128}`, unique.
fn check_tool_name(name: &str, taken: bool) -> Result<(), BuildError> {
    let problem = if name.is_empty() || name.len() > 128 {
        Some("must be 1 to 128 characters long (the Model Context Protocol's rule)")
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
    {
        Some(
            "may hold only letters, digits, '_', '.' and '-' (the Model Context Protocol's rule; \
             restrict the server to MCP v1.0 with ServerBuilder::protocols to keep it)",
        )
    } else if taken {
        Some("is the name of another tool (the Model Context Protocol calls tools by name)")
    } else {
        None
    };
    match problem {
        Some(problem) => Err(BuildError::InvalidName {
            kind: "tool",
            name: name.to_owned(),
            problem,
        }),
        None => Ok(()),
    }
}

fn check_text(
    kind: &'static str,
    mcp_id: &str,
    field: &'static str,
    text: &str,
) -> Result<(), BuildError> {
    if text.trim().is_empty() {
        return Err(BuildError::EmptyField {
            kind,
            mcp_id: mcp_id.to_owned(),
            field,
        });
    }
    Ok(())
}

/// `scheme ":" rest`, RFC 3986's scheme syntax, a non-empty rest without
/// white space or control characters.
fn is_absolute_uri(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
        && !rest.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// The quick check of `schema`, with the `fast-path` feature on; without
/// it every instance takes the full validator (and a typed tool reads its
/// arguments from a `Value`).
fn quick_check(schema: &serde_json::Value) -> Option<QuickCheck> {
    if cfg!(feature = "fast-path") {
        QuickCheck::compile(schema)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_uris() {
        for ok in ["mcp://a/b:v1", "urn:x", "mcp+x://a", "a.b-c:d"] {
            assert!(is_absolute_uri(ok), "{ok}");
        }
        for bad in [
            "",
            "no-scheme",
            "/abs/path",
            "1mcp://a",
            "mcp:",
            "mcp://a b",
            ":x",
            "mc p://a",
        ] {
            assert!(!is_absolute_uri(bad), "{bad}");
        }
    }

    #[test]
    fn tool_names_follow_the_model_context_rule() {
        for ok in ["echo", "file-writer", "a.b_c-9", &"x".repeat(128)] {
            assert!(check_tool_name(ok, false).is_ok(), "{ok}");
        }
        for bad in ["", "has space", "x?v=1", "é", &"x".repeat(129)] {
            assert!(check_tool_name(bad, false).is_err(), "{bad}");
        }
        assert!(check_tool_name("echo", true).is_err());
    }
}
