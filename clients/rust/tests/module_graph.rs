//! No circles between the crate's modules: every `crate::` path in `src/*.rs` points one way
//! (run → process, run → stream → ...). A name the crate root re-exports (`crate::Run`)
//! counts as the module that defines it. Code under `#[cfg(test)]` is left out: the unit
//! tests are child modules of their own, free to use any part of the crate.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The source with comments, string and char literals blanked out (same length, lines kept).
fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let peek = |j: usize| chars.get(j).copied();
    while i < chars.len() {
        match (chars[i], peek(i + 1)) {
            ('/', Some('/')) => {
                while i < chars.len() && chars[i] != '\n' {
                    out.push(' ');
                    i += 1;
                }
            }
            ('/', Some('*')) => {
                let mut depth = 0;
                while i < chars.len() {
                    if chars[i] == '/' && peek(i + 1) == Some('*') {
                        depth += 1;
                        out.push_str("  ");
                        i += 2;
                    } else if chars[i] == '*' && peek(i + 1) == Some('/') {
                        depth -= 1;
                        out.push_str("  ");
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        out.push(blank(chars[i]));
                        i += 1;
                    }
                }
            }
            ('r', Some('#' | '"')) if i == 0 || !chars[i - 1].is_alphanumeric() => {
                // A raw string r"..." or r#"..."#: it ends at a quote followed by as many #.
                let mut hashes = 0;
                let mut j = i + 1;
                while chars.get(j) == Some(&'#') {
                    hashes += 1;
                    j += 1;
                }
                if chars.get(j) != Some(&'"') {
                    out.push(chars[i]);
                    i += 1;
                    continue;
                }
                j += 1;
                while j < chars.len()
                    && !(chars[j] == '"' && (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')))
                {
                    j += 1;
                }
                let end = (j + 1 + hashes).min(chars.len());
                out.extend(chars[i..end].iter().map(|&c| blank(c)));
                i = end;
            }
            ('"', _) => {
                out.push(' ');
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    let skip = if chars[i] == '\\' { 2 } else { 1 };
                    for _ in 0..skip {
                        if i < chars.len() {
                            out.push(blank(chars[i]));
                            i += 1;
                        }
                    }
                }
                out.push(' ');
                i += 1;
            }
            // A char literal ('x', '\n', '\u{7f}'); a lifetime ('a) has no closing quote.
            ('\'', Some('\\')) => {
                let end = (i + 3..chars.len())
                    .find(|&j| chars[j] == '\'')
                    .unwrap_or(i);
                out.extend(std::iter::repeat_n(' ', end + 1 - i));
                i = end + 1;
            }
            ('\'', Some(_)) if peek(i + 2) == Some('\'') => {
                out.push_str("   ");
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Blanks out every item marked `#[cfg(test)]`: up to its `;` or its closing brace.
fn without_test_items(code: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let mut out = code.to_string();
    let mut from = 0;
    while let Some(at) = out[from..].find(MARK).map(|at| at + from) {
        let bytes = out.as_bytes();
        let mut depth = 0usize;
        let mut end = at + MARK.len();
        // Further attributes (`#[path = ...]`) are bracketed, so depth stays above 0 inside them.
        while end < bytes.len() {
            match bytes[end] {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' => depth = depth.saturating_sub(1),
                b'}' => {
                    if depth <= 1 {
                        break;
                    }
                    depth -= 1;
                }
                b';' if depth == 0 => break,
                _ => {}
            }
            end += 1;
        }
        let blanked: String = out[at..=end.min(bytes.len() - 1)]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(at..=end.min(out.len() - 1), &blanked);
        from = end;
    }
    out
}

/// The first segments of every `crate::` path: `crate::run::Run` gives `run`, and
/// `crate::{error::Error, types}` gives `error` and `types`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(at) = code[from..].find("crate::").map(|at| at + from) {
        from = at + "crate::".len();
        if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
            continue; // e.g. `my_crate::`
        }
        if bytes.get(from) == Some(&b'{') {
            // A group: its top-level entries, each up to a comma.
            let mut depth = 0;
            let mut entry_start = from + 1;
            for (offset, byte) in code[from..].bytes().enumerate() {
                let here = from + offset;
                match byte {
                    b'{' => depth += 1,
                    b'}' | b',' if depth == 1 => {
                        found.push(first_segment(&code[entry_start..here]));
                        entry_start = here + 1;
                        if byte == b'}' {
                            break;
                        }
                    }
                    b'}' => depth -= 1,
                    _ => {}
                }
            }
        } else {
            found.push(first_segment(&code[from..]));
        }
    }
    found.retain(|name| !name.is_empty());
    found
}

fn first_segment(path: &str) -> String {
    path.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// What the crate root re-exports: name → the module it comes from (`pub use run::{Run}`).
fn re_exports(lib: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for statement in lib.split(';') {
        let Some(at) = statement.find("pub use ") else {
            continue;
        };
        let path = statement[at + "pub use ".len()..].trim();
        let Some((module, rest)) = path.split_once("::") else {
            continue;
        };
        let rest = rest.trim().trim_start_matches('{').trim_end_matches('}');
        for name in rest.split(',') {
            let name = name.trim();
            let name = name.rsplit(" as ").next().unwrap_or(name).trim();
            if !name.is_empty() {
                names.insert(name.to_string(), module.to_string());
            }
        }
    }
    names
}

/// The module graph of `sources` (module name → its source; `lib` is the crate root).
fn module_graph(sources: &BTreeMap<String, String>) -> Result<Graph, String> {
    let lib = without_test_items(&code_only(&sources["lib"]));
    let exported = re_exports(&lib);
    let mut graph = Graph::new();
    for (module, source) in sources.iter().filter(|(name, _)| *name != "lib") {
        let code = without_test_items(&code_only(source));
        let edges = graph.entry(module.clone()).or_default();
        for name in crate_paths(&code) {
            let target = if sources.contains_key(&name) {
                name
            } else if let Some(defining) = exported.get(&name) {
                defining.clone()
            } else if lib.contains(&format!("mod {name} ")) || lib.contains(&format!("mod {name};"))
            {
                continue; // a module written inside lib.rs (the generated `proto`): a leaf
            } else {
                return Err(format!(
                    "{module}.rs: cannot tell which module `crate::{name}` is"
                ));
            };
            if target != *module {
                edges.insert(target);
            }
        }
    }
    Ok(graph)
}

/// One circle as a path `a -> b -> ... -> a`, if the graph has any.
fn find_circle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &Graph,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|member| member == node) {
            let mut circle = path[at..].to_vec();
            circle.push(node.to_string());
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(circle) = visit(next, graph, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_modules_of_src_form_no_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "rs") {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            sources.insert(name, std::fs::read_to_string(&path).unwrap());
        }
    }
    assert!(sources.contains_key("run") && sources.contains_key("process"));
    let graph = module_graph(&sources).unwrap();
    assert!(
        graph["run"].contains("process"),
        "the run starts managed children: run -> process ({graph:?})"
    );
    if let Some(circle) = find_circle(&graph) {
        panic!(
            "import circle: {} (move the shared piece to a lower module)",
            circle.join(" -> ")
        );
    }
}

#[test]
fn the_check_sees_circles_through_groups_re_exports_and_inline_paths() {
    let source = |text: &str| text.to_string();
    let mut sources = BTreeMap::from([
        (
            "lib".to_string(),
            source("mod a;\nmod b;\nmod c;\npub mod proto { }\npub use a::{Alpha, other as Renamed};\n"),
        ),
        ("a".to_string(), source("use crate::{proto, b::{B, Bee}};\n")),
        ("b".to_string(), source("fn f() { crate::c::g(); }\n")),
        (
            "c".to_string(),
            source("// crate::a in a comment is no import\nconst S: &str = \"crate::a\";\nfn g() -> crate::Alpha { todo!() }\n#[cfg(test)]\nmod tests { use crate::a; }\n"),
        ),
    ]);
    let graph = module_graph(&sources).unwrap();
    assert_eq!(graph["a"], BTreeSet::from(["b".to_string()]));
    assert_eq!(
        find_circle(&graph),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    // Broken the way the check asks: c no longer names anything of a.
    sources.insert(
        "c".to_string(),
        source("#[cfg(test)]\nmod tests { use crate::Alpha; }\nfn g() -> u8 { b'x' }\n"),
    );
    assert_eq!(find_circle(&module_graph(&sources).unwrap()), None);
    // A name the check cannot place is an error, not a silent pass.
    sources.insert("c".to_string(), source("use crate::Unknown;\n"));
    assert!(module_graph(&sources).is_err());
}
