//! Which OAuth scopes each item needs (docs/oauth.md §4), and whether a
//! principal has them. The catalog resolves the builder's rules into this
//! table; the operations check each request's work against it.
//!
//! A request with no principal (stdio, or HTTP without a verifier) is not
//! checked: scopes are a property of verified tokens, and a server that
//! verifies none has nothing to check them against.

use std::sync::Arc;

use crate::principal::Principal;

/// Whether granted scopes cover a required one: `grants(granted, required)`
/// (a server's scope hierarchy, e.g. `files:*` covering `files:write`).
pub type ScopeGrants = Arc<dyn Fn(&[String], &str) -> bool + Send + Sync>;

/// The scopes every item needs, by the catalog's indexes, and the rule
/// that says whether granted scopes satisfy them.
#[derive(Default, Clone)]
pub(crate) struct Access {
    tools: Vec<Box<[String]>>,
    resources: Vec<Box<[String]>>,
    templates: Vec<Box<[String]>>,
    prompts: Vec<Box<[String]>>,
    grants: Option<ScopeGrants>,
    /// Lists leave out the items a principal cannot use.
    pub(crate) hide_unusable: bool,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("tools", &self.tools)
            .field("resources", &self.resources)
            .field("templates", &self.templates)
            .field("prompts", &self.prompts)
            .field("hide_unusable", &self.hide_unusable)
            .finish_non_exhaustive()
    }
}

/// What the builder was told: scopes by item name.
#[derive(Default, Clone)]
pub(crate) struct AccessRules {
    /// `(item, scopes)`: a tool's name or mcpId, a resource's URI, a
    /// template's pattern or name, or a prompt's name or mcpId.
    pub(crate) required: Vec<(String, Vec<String>)>,
    pub(crate) grants: Option<ScopeGrants>,
    pub(crate) hide_unusable: bool,
}

impl Access {
    /// The scopes of each tool, resource, template and prompt (by the
    /// catalog's indexes), and the builder's rules for granting them.
    pub(crate) fn new(
        [tools, resources, templates, prompts]: [Vec<Box<[String]>>; 4],
        rules: &AccessRules,
    ) -> Self {
        Self {
            tools,
            resources,
            templates,
            prompts,
            grants: rules.grants.clone(),
            hide_unusable: rules.hide_unusable,
        }
    }

    /// Every scope some item needs, sorted, once each.
    #[cfg_attr(not(feature = "oauth"), allow(dead_code))]
    pub(crate) fn all_scopes(&self) -> Vec<String> {
        let mut all: Vec<String> = [&self.tools, &self.resources, &self.templates, &self.prompts]
            .iter()
            .flat_map(|kind| kind.iter().flat_map(|scopes| scopes.iter().cloned()))
            .collect();
        all.sort();
        all.dedup();
        all
    }

    /// The scopes `item` needs (none for an index out of range).
    pub(crate) fn needs(&self, item: Item) -> &[String] {
        let scopes = match item {
            Item::Tool(i) => self.tools.get(i),
            Item::Resource(i) => self.resources.get(i),
            Item::Template(i) => self.templates.get(i),
            Item::Prompt(i) => self.prompts.get(i),
        };
        scopes.map_or(&[], |s| s)
    }

    /// Whether `principal` has every scope of `needed`.
    pub(crate) fn allows(&self, principal: &Principal, needed: &[String]) -> bool {
        needed.iter().all(|scope| match &self.grants {
            Some(grants) => grants(principal.scopes(), scope),
            None => principal.has_scope(scope),
        })
    }

    /// Whether `principal` (if any) may use tool `i`, resource `i`,
    /// template `i` or prompt `i`: for lists that hide what a token cannot
    /// use.
    pub(crate) fn shows(&self, principal: Option<&Principal>, item: Item) -> bool {
        principal.is_none_or(|principal| self.allows(principal, self.needs(item)))
    }
}

/// An item of the catalog, by kind and index.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Item {
    Tool(usize),
    Resource(usize),
    Template(usize),
    Prompt(usize),
}

/// RFC 6749 §3.3: `scope-token = 1*( %x21 / %x23-5B / %x5D-7E )`.
pub(crate) fn is_scope_token(scope: &str) -> bool {
    !scope.is_empty()
        && scope
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_tokens_are_rfc6749_tokens() {
        for ok in ["mcp", "files:write", "a/b.c-d_e~"] {
            assert!(is_scope_token(ok), "{ok}");
        }
        for bad in ["", "two words", "quote\"", "back\\slash", "é"] {
            assert!(!is_scope_token(bad), "{bad}");
        }
    }
}
