//! The crate's layers run one way: no module names a module of a layer
//! above its own, and no two sibling modules name each other, directly or
//! through others. The layers are the numbered list under "Layers" in
//! `src/lib.rs`, read from there, so the docs and this test cannot drift.
//!
//! Names are read from the code with its comments and strings removed:
//! every `use` tree and every path that starts with `crate::`, `super::` or
//! `self::`. A name a module re-exports (`crate::Server`) counts as the
//! module it comes from.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::Path;

/// A module path inside the crate: `["server", "session"]`; the root is `[]`.
type Module = Vec<String>;

fn modules(dir: &Path, prefix: &Module, out: &mut BTreeMap<Module, String>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("src/ is readable")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("a UTF-8 file name")
            .to_owned();
        if path.is_dir() {
            let mut inner = prefix.clone();
            inner.push(name);
            modules(&path, &inner, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let mut module = prefix.clone();
            if name != "mod" && name != "lib" {
                module.push(name);
            }
            let text = fs::read_to_string(&path).expect("a readable source file");
            out.insert(module, text);
        }
    }
}

/// The code without comments, string and char literals (their contents
/// become spaces, so paths inside them are not read).
fn code_only(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            let end = rest.find('\n').map_or(text.len(), |n| i + n);
            i = end;
        } else if rest.starts_with("/*") {
            let end = rest.find("*/").map_or(text.len(), |n| i + n + 2);
            i = end;
        } else if let Some(hashes) = raw_string_start(rest) {
            let close = format!("\"{}", "#".repeat(hashes));
            let body = i + hashes + 2;
            let end = text[body..]
                .find(&close)
                .map_or(text.len(), |n| body + n + close.len());
            out.push(' ');
            i = end;
        } else if bytes[i] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            out.push(' ');
            i = j + 1;
        } else if bytes[i] == b'\'' && is_char_literal(rest) {
            // The closing quote: past an escape's first character.
            let skip = if rest[1..].starts_with('\\') { 3 } else { 1 };
            let len = rest[skip..].find('\'').map_or(rest.len(), |n| skip + n + 1);
            out.push(' ');
            i += len;
        } else {
            let c = rest.chars().next().expect("not at the end");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The number of `#`s of a raw string starting here (`r"`, `r#"`, `br"`).
fn raw_string_start(rest: &str) -> Option<usize> {
    let rest = rest.strip_prefix('b').unwrap_or(rest);
    let rest = rest.strip_prefix('r')?;
    let hashes = rest.len() - rest.trim_start_matches('#').len();
    rest[hashes..].starts_with('"').then_some(hashes)
}

/// Whether a `'` starts a char literal rather than a lifetime.
fn is_char_literal(rest: &str) -> bool {
    let mut chars = rest.chars().skip(1);
    match chars.next() {
        Some('\\') => true,
        Some(_) => chars.next() == Some('\''),
        None => false,
    }
}

/// A file's code split into its inline modules (`mod tests { … }`): each
/// with the path of inline modules it is in, its own code without theirs.
fn scopes(code: &str) -> Vec<(Vec<String>, String)> {
    let mut found = Vec::new();
    split_scopes(code, &mut Vec::new(), &mut found);
    found
}

fn split_scopes(code: &str, inline: &mut Vec<String>, found: &mut Vec<(Vec<String>, String)>) {
    let mut own = String::new();
    let mut rest = code;
    while let Some((before, name, body, after)) = next_inline_module(rest) {
        own.push_str(before);
        inline.push(name.to_owned());
        split_scopes(body, inline, found);
        inline.pop();
        rest = after;
    }
    own.push_str(rest);
    found.push((inline.clone(), own));
}

/// The first `mod name { body }` in `code`: what precedes it, its name,
/// its body and what follows it.
fn next_inline_module(code: &str) -> Option<(&str, &str, &str, &str)> {
    let mut from = 0;
    while let Some(found) = code[from..].find("mod ") {
        let at = from + found;
        from = at + 4;
        if code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let after_name = code[from..].trim_start();
        let name_len = after_name
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(after_name.len());
        let name = &after_name[..name_len];
        let rest = after_name[name_len..].trim_start();
        if name.is_empty() || !rest.starts_with('{') {
            continue;
        }
        let open = code.len() - rest.len();
        let mut depth = 0usize;
        for (i, c) in code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        let close = open + i;
                        return Some((
                            &code[..at],
                            name,
                            &code[open + 1..close],
                            &code[close + 1..],
                        ));
                    }
                }
                _ => {}
            }
        }
        return None;
    }
    None
}

/// Every path the code names: `use` trees expanded, then inline paths.
fn named_paths(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(at) = find_use(rest) {
        let after = &rest[at + 4..];
        let end = after.find(';').unwrap_or(after.len());
        expand_use(&after[..end], &mut Vec::new(), &mut paths);
        rest = &after[end..];
    }
    let words: Vec<char> = code.chars().collect();
    let text: String = words.iter().collect();
    for root in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(found) = text[from..].find(root) {
            let at = from + found;
            from = at + root.len();
            let before = text[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: String = text[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            if path.ends_with("::") {
                // The head of a use group or glob, read with its tree.
                continue;
            }
            let segments: Vec<String> = path
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            paths.push(segments);
        }
    }
    paths
}

/// The next `use` keyword (as a word) in `code`.
fn find_use(code: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = code[from..].find("use ") {
        let at = from + found;
        let before = code[..at].chars().next_back();
        if before.is_none_or(|c| !(c.is_alphanumeric() || c == '_')) {
            return Some(at);
        }
        from = at + 4;
    }
    None
}

/// Expands one use tree (`crate::a::{b, c::{d as e, *}}`) into its paths.
fn expand_use(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    if tree.is_empty() {
        // After a group's trailing comma.
        return;
    }
    if let Some(open) = tree.find('{') {
        let head = tree[..open].trim().trim_end_matches("::");
        let depth = prefix.len();
        prefix.extend(
            head.split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        );
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        for item in split_top_level(inner) {
            expand_use(item, prefix, out);
        }
        prefix.truncate(depth);
    } else {
        let name = tree.split(" as ").next().unwrap_or(tree).trim();
        let mut path = prefix.clone();
        path.extend(
            name.split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty() && *s != "*")
                .map(str::to_owned),
        );
        if !path.is_empty() {
            out.push(path);
        }
    }
}

/// The items of a use group, split at its own commas.
fn split_top_level(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    items
}

/// The module a path names, from module `from`; `None` when it names
/// nothing of this crate (`std::…`, a dependency).
fn resolve(
    from: &Module,
    path: &[String],
    known: &BTreeMap<Module, String>,
    reexports: &HashMap<(Module, String), Module>,
) -> Option<Module> {
    let mut base: Module;
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => {
            base = Vec::new();
            rest = &path[1..];
        }
        Some("super") => {
            base = from.clone();
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        Some("self") => {
            base = from.clone();
            rest = &path[1..];
        }
        Some(first) => {
            // A path from a use tree may start at a child of the module.
            let mut child = from.clone();
            child.push(first.to_owned());
            if !known.contains_key(&child) {
                return None;
            }
            base = from.clone();
        }
        None => return None,
    }
    // The longest prefix that is a module, then a name it re-exports.
    let mut best = base.clone();
    for segment in rest {
        base.push(segment.clone());
        if known.contains_key(&base) {
            best = base.clone();
        } else {
            if let Some(from) = reexports.get(&(best.clone(), segment.clone())) {
                return Some(from.clone());
            }
            break;
        }
    }
    Some(best)
}

/// What each module re-exports (`pub use`, `pub(crate) use`): the module
/// and the name, and the module the name comes from.
fn reexports(known: &BTreeMap<Module, String>) -> HashMap<(Module, String), Module> {
    let mut names = HashMap::new();
    for (module, text) in known {
        let mut paths = Vec::new();
        for statement in code_only(text).split(';') {
            let statement = statement.trim();
            let tree = ["pub use ", "pub(crate) use ", "pub(super) use "]
                .iter()
                .find_map(|p| statement.rsplit_once(p).map(|(_, tree)| tree));
            if let Some(tree) = tree {
                expand_use(tree, &mut Vec::new(), &mut paths);
            }
        }
        for path in paths {
            let Some(name) = path.last().cloned() else {
                continue;
            };
            if let Some(from) = resolve(module, &path, known, &HashMap::new())
                .filter(|from| from != module && !from.is_empty())
            {
                names.insert((module.clone(), name), from);
            }
        }
    }
    names
}

/// The layers named in lib.rs, lowest first: each a name and the module
/// paths it holds. An item reads `N. **name** (`a`, `b::c`): what it is`,
/// and may wrap over several lines.
fn layers(lib: &str) -> Vec<(String, Vec<Module>)> {
    let mut items: Vec<String> = Vec::new();
    let mut in_section = false;
    for line in lib.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            continue;
        };
        let doc = doc.trim();
        if doc.starts_with("## ") {
            in_section = doc == "## Layers";
            continue;
        }
        if !in_section {
            continue;
        }
        let numbered = doc
            .split_once(". **")
            .is_some_and(|(n, _)| n.parse::<usize>().is_ok());
        if numbered {
            items.push(doc.to_owned());
        } else if doc.is_empty() {
            in_section = in_section && items.is_empty();
        } else if let Some(last) = items.last_mut() {
            last.push(' ');
            last.push_str(doc);
        }
    }
    items
        .iter()
        .map(|item| {
            let rest = item.split_once(". **").map_or("", |(_, rest)| rest);
            let (name, rest) = rest.split_once("**").unwrap_or((rest, ""));
            let listed = rest
                .trim_start()
                .strip_prefix('(')
                .and_then(|r| r.split_once(')'))
                .map_or("", |(listed, _)| listed);
            let modules = listed
                .split('`')
                .skip(1)
                .step_by(2)
                .map(|m| m.split("::").map(str::to_owned).collect())
                .collect();
            (name.to_owned(), modules)
        })
        .collect()
}

/// The index of the layer module `m` is in: the longest listed prefix.
fn layer_of(m: &Module, layers: &[(String, Vec<Module>)]) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for (index, (_, modules)) in layers.iter().enumerate() {
        for listed in modules {
            if m.starts_with(listed) && best.is_none_or(|(len, _)| listed.len() > len) {
                best = Some((listed.len(), index));
            }
        }
    }
    best.map(|(_, index)| index)
}

fn show(m: &Module) -> String {
    if m.is_empty() {
        "crate".to_owned()
    } else {
        m.join("::")
    }
}

struct Crate {
    /// Every module, the modules it names, and a path that names each.
    edges: BTreeMap<Module, BTreeMap<Module, String>>,
    layers: Vec<(String, Vec<Module>)>,
}

fn read_crate() -> Crate {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut known = BTreeMap::new();
    modules(&src, &Vec::new(), &mut known);
    let lib = known.get(&Vec::new()).cloned().expect("src/lib.rs");
    let reexports = reexports(&known);
    let mut edges = BTreeMap::new();
    for (module, text) in &known {
        let mut named = BTreeMap::new();
        for (inline, code) in scopes(&code_only(text)) {
            let mut scope = module.clone();
            scope.extend(inline);
            for path in named_paths(&code) {
                if let Some(target) = resolve(&scope, &path, &known, &reexports)
                    && !target.starts_with(module)
                {
                    named.entry(target).or_insert_with(|| path.join("::"));
                }
            }
        }
        edges.insert(module.clone(), named);
    }
    Crate {
        edges,
        layers: layers(&lib),
    }
}

#[test]
fn lib_rs_names_the_layers_and_every_module_is_in_one() {
    let krate = read_crate();
    assert!(
        krate.layers.len() >= 5,
        "lib.rs's \"## Layers\" list was not found: {:?}",
        krate.layers
    );
    let unplaced: Vec<String> = krate
        .edges
        .keys()
        .filter(|m| !m.is_empty() && layer_of(m, &krate.layers).is_none())
        .map(show)
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules in no layer of lib.rs: {unplaced:?}"
    );
}

#[test]
fn no_module_names_a_module_of_a_higher_layer() {
    let krate = read_crate();
    let mut climbs = Vec::new();
    for (from, named) in &krate.edges {
        let Some(low) = layer_of(from, &krate.layers) else {
            continue;
        };
        for (to, path) in named {
            // The root only declares modules and re-exports.
            if to.is_empty() {
                continue;
            }
            if let Some(high) = layer_of(to, &krate.layers)
                && high > low
            {
                climbs.push(format!(
                    "{} ({}) names {} ({}): {path}",
                    show(from),
                    krate.layers[low].0,
                    show(to),
                    krate.layers[high].0
                ));
            }
        }
    }
    assert!(
        climbs.is_empty(),
        "imports that climb a layer:\n{}",
        climbs.join("\n")
    );
}

/// The layers above `dialect` that reach a dialect only through the
/// `dialect` module's own items (the `Dialect` enum, and the types and
/// functions it re-exports), never by naming `dialect::v1`,
/// `dialect::model_context` or any other module inside it.
const THROUGH_DIALECT: [&str; 3] = ["session", "server", "transport"];

#[test]
fn session_server_and_transport_reach_a_dialect_only_through_dialect() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut known = BTreeMap::new();
    modules(&src, &Vec::new(), &mut known);
    let layers = layers(known.get(&Vec::new()).expect("src/lib.rs"));
    let dialect: Module = vec!["dialect".to_owned()];
    let mut reached = Vec::new();
    for (module, text) in &known {
        let held = layer_of(module, &layers)
            .is_some_and(|i| THROUGH_DIALECT.contains(&layers[i].0.as_str()));
        if !held {
            continue;
        }
        for (inline, code) in scopes(&code_only(text)) {
            let mut scope = module.clone();
            scope.extend(inline);
            for path in named_paths(&code) {
                // Read as written: a name the dialect module re-exports is
                // its own.
                if let Some(target) = resolve(&scope, &path, &known, &HashMap::new())
                    && target.starts_with(&dialect)
                    && target.len() > dialect.len()
                {
                    reached.push(format!(
                        "{} names {}: {}",
                        show(module),
                        show(&target),
                        path.join("::")
                    ));
                }
            }
        }
    }
    assert!(
        !layers.is_empty()
            && THROUGH_DIALECT
                .iter()
                .all(|l| layers.iter().any(|(n, _)| n == l)),
        "the layers {THROUGH_DIALECT:?} are not all in lib.rs's list"
    );
    assert!(
        reached.is_empty(),
        "names of a dialect's own modules, not through `dialect`:\n{}",
        reached.join("\n")
    );
}

/// The layers below `dialect` that name no protocol: no dialect, no
/// method name, no protocol's `_meta` key.
const NEUTRAL: [&str; 2] = ["wire", "engine"];

/// The code without comments, each string literal replaced by `§N` (its
/// index), and the literals' contents: the split into inline modules then
/// sees no brace of a string, and a scope's literals are those it marks.
fn code_with_strings(text: &str) -> (String, Vec<String>) {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut strings = Vec::new();
    let mut mark = |out: &mut String, literal: &str| {
        out.push_str(&format!(" §{} ", strings.len()));
        strings.push(literal.to_owned());
    };
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |n| n + 2);
        } else if let Some(hashes) = raw_string_start(rest) {
            let close = format!("\"{}", "#".repeat(hashes));
            let body = i + usize::from(rest.starts_with('b')) + 1 + hashes + 1;
            let end = text[body..].find(&close).map_or(text.len(), |n| body + n);
            mark(&mut out, &text[body..end]);
            i = (end + close.len()).min(text.len());
        } else if bytes[i] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            mark(&mut out, &text[i + 1..j.min(text.len())]);
            i = j + 1;
        } else if bytes[i] == b'\'' && is_char_literal(rest) {
            let skip = if rest[1..].starts_with('\\') { 3 } else { 1 };
            out.push(' ');
            i += rest[skip..].find('\'').map_or(rest.len(), |n| skip + n + 1);
        } else {
            let c = rest.chars().next().expect("not at the end");
            out.push(c);
            i += c.len_utf8();
        }
    }
    (out, strings)
}

/// Whether a string literal names a protocol: a method (`tools/call`,
/// `mcp/executeTool`, `$/cancelRequest`, and those without a slash,
/// `initialize`, `initialized` and `ping`), a revision (`2025-11-25`), a
/// `_meta` key of one, or a schema keyword of one (`x-mcp-header`).
fn names_a_protocol(literal: &str) -> bool {
    let bare_method = matches!(literal, "initialize" | "initialized" | "ping");
    let revision = literal.len() == 10
        && literal.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            _ => b.is_ascii_digit(),
        });
    let method = literal.split_once('/').is_some_and(|(a, b)| {
        !a.is_empty()
            && !b.is_empty()
            && a.chars().all(|c| c.is_ascii_alphabetic() || c == '$')
            && b.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '/' || c == '_')
    });
    method
        || bare_method
        || revision
        || literal.contains("modelcontextprotocol")
        || literal.contains("x-mcp-")
}

/// Whether an identifier names a dialect or a revision.
fn names_a_dialect(word: &str) -> bool {
    matches!(word, "V1" | "McpV1" | "ModelContext" | "Revision2026")
        || word.starts_with("v1_")
        || word.ends_with("_v1")
        || word.contains("2026")
        || word.contains("model_context")
}

/// The check below finds what it is meant to find.
#[test]
fn a_protocol_is_named_by_a_method_a_revision_or_a_meta_key() {
    for named in [
        "tools/call",
        "mcp/executeTool",
        "$/cancelRequest",
        "initialize",
        "initialized",
        "ping",
        "2025-11-25",
        "io.modelcontextprotocol/protocolVersion",
        "x-mcp-header",
        r#"{"x-mcp-header":"Region"}"#,
    ] {
        assert!(names_a_protocol(named), "{named}");
    }
    for plain in [
        "",
        "a/",
        "text/event-stream!",
        "2025-1-255",
        "initialized?",
        "x-y",
    ] {
        assert!(!names_a_protocol(plain), "{plain}");
    }
    for named in ["McpV1", "v1_output", "Revision2026", "model_context"] {
        assert!(names_a_dialect(named), "{named}");
    }
}

#[test]
fn wire_and_engine_name_no_dialect_method_or_revision() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut known = BTreeMap::new();
    modules(&src, &Vec::new(), &mut known);
    let layers = layers(known.get(&Vec::new()).expect("src/lib.rs"));
    let mut named = Vec::new();
    for (module, text) in &known {
        let neutral =
            layer_of(module, &layers).is_some_and(|i| NEUTRAL.contains(&layers[i].0.as_str()));
        // Tests hold protocol text as their data.
        if !neutral || module.iter().any(|m| m == "tests") {
            continue;
        }
        let (code, strings) = code_with_strings(text);
        for (inline, scope) in scopes(&code) {
            if inline.iter().any(|m| m == "tests") {
                continue;
            }
            for word in scope.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '§')) {
                let literal = word
                    .strip_prefix('§')
                    .and_then(|n| n.parse::<usize>().ok())
                    .and_then(|n| strings.get(n));
                match literal {
                    Some(literal) if names_a_protocol(literal) => {
                        named.push(format!("{}: \"{literal}\"", show(module)));
                    }
                    None if names_a_dialect(word) => {
                        named.push(format!("{}: {word}", show(module)))
                    }
                    _ => {}
                }
            }
        }
    }
    assert!(
        !layers.is_empty() && NEUTRAL.iter().all(|l| layers.iter().any(|(n, _)| n == l)),
        "the layers {NEUTRAL:?} are not all in lib.rs's list"
    );
    assert!(
        named.is_empty(),
        "protocols, methods or revisions named below the dialect layer:\n{}",
        named.join("\n")
    );
}

#[test]
fn no_two_sibling_modules_name_each_other() {
    let krate = read_crate();
    // Between siblings: a name of a descendant counts as a name of the
    // sibling holding it; a module and its own ancestors or descendants are
    // one unit (a parent declares and re-exports its children).
    let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (from, named) in &krate.edges {
        for to in named.keys() {
            let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == to.len() {
                continue;
            }
            let a = from[..=common].to_vec();
            let b = to[..=common].to_vec();
            graph.entry(a).or_default().insert(b);
        }
    }
    let cycles = strongly_connected(&graph);
    let shown: Vec<String> = cycles
        .iter()
        .map(|c| c.iter().map(show).collect::<Vec<_>>().join(" <-> "))
        .collect();
    assert!(
        shown.is_empty(),
        "modules that name each other:\n{}",
        shown.join("\n")
    );
}

/// The components of more than one node (Tarjan's algorithm).
fn strongly_connected(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<Module, BTreeSet<Module>>,
        index: HashMap<&'g Module, usize>,
        low: HashMap<&'g Module, usize>,
        stack: Vec<&'g Module>,
        on_stack: BTreeSet<&'g Module>,
        found: Vec<Vec<Module>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g Module) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.graph.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

#[test]
fn the_reader_of_names_sees_use_trees_and_paths_but_not_comments() {
    let code = code_only(
        "use crate::{a::{B, c::D}, e};\n// crate::hidden\nlet s = \"crate::in_string\";\nfn f() { super::g::h(); }\n",
    );
    let paths = named_paths(&code);
    let has = |p: &[&str]| paths.iter().any(|q| q == p);
    assert!(has(&["crate", "a", "B"]));
    assert!(has(&["crate", "a", "c", "D"]));
    assert!(has(&["crate", "e"]));
    assert!(has(&["super", "g", "h"]));
    assert!(
        !paths
            .iter()
            .flatten()
            .any(|s| s == "hidden" || s == "in_string")
    );
}
