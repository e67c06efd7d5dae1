//! The request traces in `docs/architecture.md` stay true: every step
//! names a function that exists in the file it names (a method named with
//! its type, `Job::poll_once`, in an `impl` block of that type), the steps are
//! numbered without gaps, a step that says it is "as" another step names
//! the same function, and each trace's totals (functions and files, with
//! and without the scanner helpers of `src/fast/`) and the table of where
//! the steps go add up to the steps written. The list of layers in §1
//! is `src/lib.rs`'s.
//!
//! A step is a line `N. path.rs: `Type::function` — what it does`, or a
//! range `N–M. path.rs `f`, `g`; other.rs `h` — as a.K–L` whose names are
//! read in order (a range with no path, `` `f` … `g` — as a.K–L``, is the
//! steps it refers to).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;

/// One step of a trace: the file (under `src/`), the function's name and,
/// for a method named with its type (`Job::poll_once`), the type.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Step {
    file: String,
    function: String,
    owner: Option<String>,
}

impl Step {
    /// The step of `name` (`function`, `Type::function`) in `file`.
    fn named(file: &str, name: &str) -> Self {
        let mut parts = name.rsplit("::");
        let function = parts.next().unwrap_or(name).to_owned();
        Self {
            file: file.to_owned(),
            function,
            owner: parts.next().map(str::to_owned),
        }
    }
}

/// A trace: its letter, its steps in order, and the totals its bold
/// summary line states.
#[derive(Debug)]
struct Trace {
    letter: char,
    steps: Vec<Step>,
    stated: Option<[usize; 4]>,
}

fn document() -> String {
    fs::read_to_string("docs/architecture.md").expect("docs/architecture.md is readable")
}

/// The backticked words of `text`, in order.
fn backticked(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The last path segment of a name: `Job::poll_once` → `poll_once`.
fn function_of(name: &str) -> String {
    name.rsplit("::").next().unwrap_or(name).to_owned()
}

/// A reference such as `as a.16` or `as a.26–35` in a step's description:
/// the trace's letter and the first and last step.
fn reference(description: &str) -> Option<(char, usize, usize)> {
    let rest = match description.strip_prefix("as ") {
        Some(rest) => rest,
        None => &description[description.find(" as ")? + 4..],
    };
    let mut chars = rest.chars();
    let letter = chars.next()?;
    if !letter.is_ascii_lowercase() || chars.next() != Some('.') {
        return None;
    }
    let numbers: String = rest[2..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '–')
        .collect();
    let mut parts = numbers.split('–');
    let first = parts.next()?.parse().ok()?;
    let last = match parts.next() {
        Some(last) => last.parse().ok()?,
        None => first,
    };
    Some((letter, first, last))
}

/// `text` without its parenthesised asides.
fn without_asides(text: &str) -> String {
    let mut depth = 0usize;
    text.chars()
        .filter(|&c| {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                _ => return depth == 0,
            }
            false
        })
        .collect()
}

/// The steps a range line names, each under the last path before it
/// (names in parentheses are asides, not steps).
fn range_steps(names: &str) -> Vec<Step> {
    let mut file: Option<String> = None;
    let mut steps = Vec::new();
    for (i, part) in without_asides(names).split('`').enumerate() {
        if i % 2 == 1 {
            if let Some(file) = &file {
                steps.push(Step::named(file, part));
            }
        } else if let Some(path) = part
            .split([' ', ',', ';'])
            .rev()
            .find(|w| w.ends_with(".rs"))
        {
            file = Some(path.to_owned());
        }
    }
    steps
}

/// Reads the traces of section 4, resolving elided ranges by the steps
/// they refer to.
fn traces(text: &str) -> Vec<Trace> {
    let start = text.find("### a. ").expect("the traces begin with trace a");
    let end = text[start..]
        .find("### Where the steps go")
        .map_or(text.len(), |n| start + n);
    let mut traces: Vec<Trace> = Vec::new();
    for line in text[start..end].lines() {
        if let Some(title) = line.strip_prefix("### ") {
            let letter = title.chars().next().expect("a trace's letter");
            traces.push(Trace {
                letter,
                steps: Vec::new(),
                stated: None,
            });
            continue;
        }
        let here = traces.last_mut().expect("a step inside a trace");
        if let Some(summary) = line.strip_prefix("**") {
            here.stated = Some(summary_numbers(summary));
            continue;
        }
        let (letter, expected) = (here.letter, here.steps.len() + 1);
        let Some((numbers, rest)) = line.split_once(". ") else {
            continue;
        };
        let Some((first, last)) = step_numbers(numbers) else {
            continue;
        };
        assert_eq!(
            first,
            expected,
            "trace {letter}: step {first} follows step {}",
            expected - 1
        );
        let (names, description) = rest.split_once(" — ").unwrap_or((rest, ""));
        let steps = if first == last {
            let (file, name) = names
                .split_once(": ")
                .unwrap_or_else(|| panic!("trace {letter}: step {first} names no file"));
            let words = backticked(name);
            // `Slot`'s `drop`: the second word is the type's function.
            let name = if name.contains("`'s `") {
                format!("{}::{}", words[0], words[1])
            } else {
                words[0].to_owned()
            };
            vec![Step::named(file, &name)]
        } else if names.contains(".rs") {
            range_steps(names)
        } else {
            let (other, from, to) = reference(description).unwrap_or_else(|| {
                panic!("trace {letter}: steps {first}–{last} name no files and refer to no steps")
            });
            let referred = traces
                .iter()
                .find(|t| t.letter == other)
                .unwrap_or_else(|| panic!("trace {letter} refers to trace {other}, not before it"));
            let steps = referred.steps[from - 1..to].to_vec();
            let words = backticked(names);
            assert_eq!(
                (
                    words.first().map(|w| function_of(w)),
                    words.last().map(|w| function_of(w))
                ),
                (
                    steps.first().map(|s| s.function.clone()),
                    steps.last().map(|s| s.function.clone())
                ),
                "{letter}.{first}–{last} names the first and last of {other}.{from}–{to}"
            );
            steps
        };
        assert_eq!(
            steps.len(),
            last - first + 1,
            "trace {letter}: steps {first}–{last} name {} functions",
            steps.len()
        );
        traces
            .last_mut()
            .expect("a step inside a trace")
            .steps
            .extend(steps);
    }
    traces
}

/// `12` or `13–16`.
fn step_numbers(numbers: &str) -> Option<(usize, usize)> {
    let mut parts = numbers.split('–');
    let first = parts.next()?.parse().ok()?;
    let last = match parts.next() {
        Some(last) => last.parse().ok()?,
        None => first,
    };
    Some((first, last))
}

/// The four numbers of `N functions in F files, M in G without the two
/// scanner helpers`.
fn summary_numbers(summary: &str) -> [usize; 4] {
    let numbers: Vec<usize> = summary
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .take(4)
        .map(|w| w.parse().expect("a number"))
        .collect();
    numbers
        .try_into()
        .unwrap_or_else(|_| panic!("a summary with four numbers: {summary}"))
}

/// Whether `code` defines the step's function: inside an `impl` block of
/// its type when it names one (`impl Type`, `impl<..> Type<..>`, `impl
/// Trait for Type`), anywhere else.
fn defines(code: &str, step: &Step) -> bool {
    let has_fn = |text: &str| {
        text.contains(&format!("fn {}(", step.function))
            || text.contains(&format!("fn {}<", step.function))
    };
    let Some(owner) = &step.owner else {
        return has_fn(code);
    };
    let mut lines = code.lines();
    while let Some(line) = lines.next() {
        let header = line.trim_start();
        if !header.starts_with("impl") || !names_type(header, owner) {
            continue;
        }
        // The block runs to the `}` at the header's own indent.
        let indent = &line[..line.len() - header.len()];
        let block: Vec<&str> = lines
            .by_ref()
            .take_while(|l| *l != format!("{indent}}}"))
            .collect();
        if has_fn(&block.join("\n")) {
            return true;
        }
    }
    false
}

/// Whether an `impl` header is for `owner`: the type implemented, after
/// `for` when there is one.
fn names_type(header: &str, owner: &str) -> bool {
    let implemented = header.rsplit(" for ").next().unwrap_or(header);
    let implemented = implemented
        .trim_start_matches("impl")
        .trim_start_matches(|c: char| c != ' ' && c != '<' && !c.is_alphabetic());
    // Past the impl's own generics (`impl<'a> `), the type's path.
    let after_generics = match implemented.strip_prefix('<') {
        Some(rest) => rest.split_once("> ").map_or(rest, |(_, ty)| ty),
        None => implemented,
    };
    let ty: String = after_generics
        .trim()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
        .collect();
    ty.rsplit("::").next() == Some(owner)
}

#[test]
fn every_step_names_a_function_of_the_file_it_names() {
    let mut missing = Vec::new();
    for trace in traces(&document()) {
        for (i, step) in trace.steps.iter().enumerate() {
            let path = format!("src/{}", step.file);
            let code = fs::read_to_string(&path)
                .unwrap_or_else(|_| panic!("trace {}: {path} does not exist", trace.letter));
            if !defines(&code, step) {
                let name = match &step.owner {
                    Some(owner) => format!("{owner}::{}", step.function),
                    None => step.function.clone(),
                };
                missing.push(format!(
                    "{}.{}: no `fn {}` in {path}",
                    trace.letter,
                    i + 1,
                    name
                ));
            }
        }
    }
    assert!(missing.is_empty(), "stale steps:\n{}", missing.join("\n"));
}

#[test]
fn a_step_as_another_names_the_same_functions() {
    let text = document();
    let traces = traces(&text);
    let by_letter: BTreeMap<char, &Trace> = traces.iter().map(|t| (t.letter, t)).collect();
    let start = text.find("### a. ").expect("trace a");
    let mut letter = 'a';
    let mut checked = 0;
    for line in text[start..].lines() {
        if let Some(title) = line.strip_prefix("### ") {
            match title.chars().next() {
                Some(l) if by_letter.contains_key(&l) => letter = l,
                _ => break,
            }
            continue;
        }
        let Some((numbers, rest)) = line.split_once(". ") else {
            continue;
        };
        let Some((first, last)) = step_numbers(numbers) else {
            continue;
        };
        let Some((_, description)) = rest.split_once(" — ") else {
            continue;
        };
        let Some((other, from, to)) = reference(description) else {
            continue;
        };
        let here: Vec<&String> = by_letter[&letter].steps[first - 1..last]
            .iter()
            .map(|s| &s.function)
            .collect();
        let there: Vec<&String> = by_letter[&other].steps[from - 1..to]
            .iter()
            .map(|s| &s.function)
            .collect();
        assert_eq!(
            here, there,
            "{letter}.{first}–{last} says it is as {other}.{from}–{to}"
        );
        checked += 1;
    }
    assert!(
        checked > 10,
        "the traces refer to each other: {checked} read"
    );
}

#[test]
fn each_traces_totals_add_up_to_its_steps() {
    let traces = traces(&document());
    assert_eq!(
        traces.iter().map(|t| t.letter).collect::<String>(),
        "abc",
        "three traces"
    );
    for trace in &traces {
        let files: BTreeSet<&str> = trace.steps.iter().map(|s| s.file.as_str()).collect();
        let helpers = trace
            .steps
            .iter()
            .filter(|s| s.file.starts_with("fast/"))
            .count();
        let helper_files = files.iter().filter(|f| f.starts_with("fast/")).count();
        let counted = [
            trace.steps.len(),
            files.len(),
            trace.steps.len() - helpers,
            files.len() - helper_files,
        ];
        assert_eq!(
            Some(counted),
            trace.stated,
            "trace {}: functions, files, and both without the scanner helpers",
            trace.letter
        );
    }
}

#[test]
fn the_table_of_where_the_steps_go_adds_up() {
    let text = document();
    let traces = traces(&text);
    let start = text
        .find("### Where the steps go")
        .expect("the table of where the steps go");
    let mut sums = [0usize; 2];
    let mut totals = None;
    for line in text[start..].lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let numbers: Vec<usize> = cells
            .iter()
            .filter_map(|c| c.trim_matches('*').parse().ok())
            .collect();
        if numbers.len() != 2 {
            continue;
        }
        if cells[1].contains("total") {
            totals = Some([numbers[0], numbers[1]]);
        } else {
            sums[0] += numbers[0];
            sums[1] += numbers[1];
        }
    }
    assert_eq!(Some(sums), totals, "the parts add up to the totals");
    assert_eq!(
        sums,
        [traces[0].steps.len(), traces[1].steps.len()],
        "the totals are traces a's and b's steps"
    );
}

/// The layers as a numbered list names them: `N. **layer** (`a`, `b`)`,
/// each with its modules, in order.
fn layer_list(text: &str) -> Vec<(String, Vec<String>)> {
    let mut layers = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(". **") {
        let numbered = rest[..at]
            .chars()
            .last()
            .is_some_and(|c| c.is_ascii_digit());
        rest = &rest[at + 4..];
        let Some(end) = rest.find("** (") else { break };
        let name = &rest[..end];
        let modules = &rest[end + 4..rest[end..].find(')').map_or(rest.len(), |c| end + c)];
        if numbered && !name.contains(' ') {
            layers.push((
                name.to_owned(),
                backticked(modules).into_iter().map(str::to_owned).collect(),
            ));
        }
    }
    layers
}

/// §1's list of layers is `src/lib.rs`'s, which `tests/layers.rs` holds
/// the code to: the same layers, in order, with the same modules.
#[test]
fn the_layers_listed_are_lib_rs_layers() {
    let lib = fs::read_to_string("src/lib.rs").expect("src/lib.rs is readable");
    let docs: String = lib
        .lines()
        .filter_map(|line| line.strip_prefix("//!"))
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    let text = document();
    let section = &text[text.find("## 1.").expect("§1")..text.find("## 2.").expect("§2")];
    let listed = layer_list(section);
    assert_eq!(listed.len(), 9, "{listed:?}");
    assert_eq!(listed, layer_list(&docs));
}
