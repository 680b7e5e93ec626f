//! The module tree keeps the architecture: no source file imports, directly or through others, a
//! file that imports it back (no cycle of any length),
//! and the pure layers (`json`, `event`, `model`, `codec`) never reach into I/O (`storage`,
//! `store`). Read from the sources' own `use` lines and `crate::`/`super::` paths, following
//! one level of `pub use` re-exports, as a newcomer reading the imports would.

#![allow(clippy::unwrap_used, reason = "test code fails loudly")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

struct Crate {
    /// Module path -> file.
    files: BTreeMap<Module, PathBuf>,
    /// Module -> item name -> the path it re-exports.
    reexports: BTreeMap<Module, BTreeMap<String, Vec<String>>>,
    /// Module -> every `crate::`/`super::`/relative path it names.
    paths: BTreeMap<Module, Vec<Vec<String>>>,
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The code before a file's unit tests, without line comments.
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = text
        .find("#[cfg(test)]\nmod tests")
        .map_or(text.as_str(), |i| &text[..i]);
    text.lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `use` text without white space and without `as` aliases: `a::{b as c, d}` -> `a::{b,d}`.
fn drop_aliases(text: &str) -> String {
    let mut out = String::new();
    let mut words = text.split_whitespace();
    while let Some(word) = words.next() {
        if word == "as" {
            // Keep the punctuation that follows the alias name.
            let alias = words.next().unwrap_or_default();
            out.extend(alias.chars().filter(|c| matches!(c, ',' | '}')));
        } else {
            out.push_str(word);
        }
    }
    out
}

/// `a::{b, c::{d, e}}` (aliases dropped) -> `a::b`, `a::c::d`, `a::c::e`.
fn expand(prefix: &str, body: &str, out: &mut Vec<String>) {
    let body = body.to_owned();
    if let Some(open) = body.find('{').filter(|_| body.ends_with('}')) {
        let pre = format!("{prefix}{}", &body[..open]);
        let inner = &body[open + 1..body.len() - 1];
        let (mut depth, mut start) = (0, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&pre, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand(&pre, &inner[start..], out);
    } else if !body.is_empty() {
        out.push(format!("{prefix}{body}"));
    }
}

fn segments(path: &str) -> Vec<String> {
    path.split("::")
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn load(src: &Path) -> Crate {
    let mut files_list = Vec::new();
    walk(src, &mut files_list);
    let mut krate = Crate {
        files: BTreeMap::new(),
        reexports: BTreeMap::new(),
        paths: BTreeMap::new(),
    };
    for file in files_list {
        let rel = file.strip_prefix(src).unwrap().with_extension("");
        let mut module: Module = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if matches!(module.last().map(String::as_str), Some("lib" | "mod")) {
            module.pop();
        }
        let code = code_of(&file);
        let mut paths = Vec::new();
        let mut rest = code.as_str();
        while let Some(at) = rest.find("use ") {
            let before = &rest[..at];
            let is_pub = before.trim_end().ends_with("pub") || before.trim_end().ends_with(')');
            let word_start = at == 0 || !rest.as_bytes()[at - 1].is_ascii_alphanumeric();
            let Some(end) = rest[at..].find(';') else {
                break;
            };
            if word_start {
                let mut expanded = Vec::new();
                expand("", &drop_aliases(&rest[at + 4..at + end]), &mut expanded);
                for p in expanded {
                    let segs = segments(&p);
                    if is_pub && let Some(last) = segs.last() {
                        krate
                            .reexports
                            .entry(module.clone())
                            .or_default()
                            .insert(last.clone(), segs.clone());
                    }
                    paths.push(segs);
                }
            }
            rest = &rest[at + end..];
        }
        // Paths written inline: `crate::a::b` and `super::a`.
        for start in ["crate::", "super::"] {
            let mut from = 0;
            while let Some(i) = code[from..].find(start) {
                let at = from + i;
                let len = code[at..]
                    .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                    .unwrap_or(code.len() - at);
                let segs = segments(&code[at..at + len]);
                // `pub(in crate::store)` names where an item is seen, not what it uses.
                let visibility = code[..at].ends_with("(in ");
                if segs.len() > 1 && !visibility {
                    paths.push(segs); // `crate::{..}` was read with its `use`
                }
                from = at + len.max(1);
            }
        }
        krate.paths.insert(module.clone(), paths);
        krate.files.insert(module, file);
    }
    krate
}

impl Crate {
    fn is_module(&self, m: &Module) -> bool {
        self.files.contains_key(m)
    }

    /// The file (module) a path names, from inside `module`.
    fn resolve(&self, module: &Module, path: &[String], depth: u32) -> Option<Module> {
        let (mut cur, rest): (Module, &[String]) = match path.first().map(String::as_str) {
            Some("crate") => (Vec::new(), &path[1..]),
            Some("super") => {
                let mut base = module.clone();
                base.pop();
                let mut rest = &path[1..];
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
                (base, rest)
            }
            Some("self") => (module.clone(), &path[1..]),
            Some(first) => {
                let mut child = module.clone();
                child.push(first.to_owned());
                if !self.is_module(&child) {
                    return None; // an external crate or a prelude name
                }
                (module.clone(), path)
            }
            None => return None,
        };
        for seg in rest {
            let mut next = cur.clone();
            next.push(seg.clone());
            if self.is_module(&next) {
                cur = next;
                continue;
            }
            // An item of `cur`: where does `cur` re-export it from?
            if depth < 4
                && let Some(target) = self.reexports.get(&cur).and_then(|r| r.get(seg))
                && let Some(m) = self.resolve(&cur, target, depth + 1)
            {
                return Some(m);
            }
            break;
        }
        Some(cur)
    }

    fn edges(&self) -> BTreeMap<Module, BTreeSet<Module>> {
        let mut out: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
        for (module, paths) in &self.paths {
            for p in paths {
                if let Some(target) = self.resolve(module, p, 0)
                    && &target != module
                    && self.is_module(&target)
                {
                    out.entry(module.clone()).or_default().insert(target);
                }
            }
        }
        out
    }
}

fn src(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(krate)
        .join("src")
}

fn name(m: &Module) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

#[test]
fn use_lines_expand_to_full_paths_without_aliases() {
    let mut out = Vec::new();
    expand(
        "",
        &drop_aliases("super::{base, c::{d as e, Class}, f as _}"),
        &mut out,
    );
    assert_eq!(
        out,
        ["super::base", "super::c::d", "super::c::Class", "super::f"]
    );
}

/// The strongly connected components of more than one module (Tarjan): every import cycle,
/// of any length, lies inside one of them.
fn cycles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on_stack: BTreeSet<&'a Module>,
        out: Vec<Vec<Module>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a Module) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.edges.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
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
                    self.out.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.out
}

#[test]
fn the_cycle_finder_finds_cycles_of_any_length() {
    let m = |s: &str| vec![s.to_owned()];
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (a, b) in [
        ("a", "b"),
        ("b", "c"),
        ("c", "d"),
        ("d", "e"),
        ("e", "a"),
        ("e", "f"),
    ] {
        edges.entry(m(a)).or_default().insert(m(b));
    }
    assert_eq!(
        cycles(&edges),
        vec![vec![m("a"), m("b"), m("c"), m("d"), m("e")]]
    );
    edges.get_mut(&m("e")).unwrap().remove(&m("a"));
    assert!(cycles(&edges).is_empty());
}

#[test]
fn no_source_file_imports_a_file_that_imports_it_back() {
    for krate in [
        "engine",
        "workload",
        "formats",
        "reference",
        "tools/sessdb",
        "bindings/node",
    ] {
        let c = load(&src(krate));
        let edges = c.edges();
        if krate == "engine" {
            let n = edges.values().map(BTreeSet::len).sum::<usize>();
            assert!(n > 100, "the import reader found only {n} edges");
        }
        let found: Vec<String> = cycles(&edges)
            .iter()
            .map(|c| c.iter().map(name).collect::<Vec<_>>().join(" -> "))
            .collect();
        assert!(found.is_empty(), "{krate}: import cycles among {found:#?}");
    }
}

#[test]
fn the_pure_layers_do_not_reach_into_io() {
    let c = load(&src("engine"));
    let edges = c.edges();
    let mut wrong = Vec::new();
    for (from, targets) in &edges {
        let layer = from.first().map(String::as_str).unwrap_or("");
        if !matches!(layer, "json" | "event" | "model" | "codec") {
            continue;
        }
        for to in targets {
            if matches!(to.first().map(String::as_str), Some("store" | "storage")) {
                wrong.push(format!("{} -> {}", name(from), name(to)));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    // The reader sees real edges: the catalog plans with the model and encodes with the codec.
    let write = vec!["store".to_owned(), "catalog".to_owned(), "write".to_owned()];
    let targets = edges.get(&write).unwrap();
    assert!(targets.contains(&vec!["codec".to_owned(), "record".to_owned()]));
    assert!(targets.contains(&vec!["model".to_owned(), "lifecycle".to_owned()]));
}

/// No file of `store/` imports the store's facade (`store/mod.rs`, which re-exports the
/// public types): a part importing it would sit above every part the facade names (before:
/// `tail.rs` and `verify.rs` did, which put a circle through the whole store).
#[test]
fn no_store_file_imports_the_store_facade() {
    let c = load(&src("engine"));
    let facade = vec!["store".to_owned()];
    // A path naming an item of the facade itself, its re-exports not followed (depth 4).
    let names_facade =
        |module: &Module, path: &Vec<String>| c.resolve(module, path, 4).as_ref() == Some(&facade);
    let mut wrong = Vec::new();
    for (from, paths) in &c.paths {
        if from.first().map(String::as_str) == Some("store") && from != &facade {
            for p in paths.iter().filter(|p| names_facade(from, p)) {
                wrong.push(format!("{}: {}", name(from), p.join("::")));
            }
        }
    }
    assert!(wrong.is_empty(), "import the facade: {wrong:#?}");
    // The check sees such an import: the crate root's re-exports do.
    assert!(
        c.paths[&Vec::new()]
            .iter()
            .any(|p| names_facade(&Vec::new(), p))
    );
}

/// `impl Inner` is written in one file: the open store's owners (writer, catalog,
/// checkpointer, maintenance) have their own types, and only `inner.rs` sequences them.
#[test]
fn inner_is_implemented_in_one_file() {
    let root = src("engine");
    let mut files_list = Vec::new();
    walk(&root, &mut files_list);
    let implementing: Vec<String> = files_list
        .iter()
        .filter(|f| code_of(f).contains("impl Inner"))
        .map(|f| f.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    assert_eq!(implementing, ["store/inner.rs"]);
}

/// The lines of each `fn` body in `code`, by name (a body from its `fn` line to the line
/// that closes it at the same indentation).
fn function_lengths(code: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let is_fn = [
            "fn ",
            "pub fn ",
            "pub(crate) fn ",
            "pub(super) fn ",
            "pub(in ",
        ]
        .iter()
        .any(|p| trimmed.starts_with(p))
            && trimmed.contains("fn ");
        if !is_fn || trimmed.ends_with(';') {
            continue;
        }
        let name = trimmed
            .split("fn ")
            .nth(1)
            .and_then(|r| r.split(['(', '<']).next())
            .unwrap_or_default()
            .to_owned();
        let close = " ".repeat(indent) + "}";
        if let Some(end) = lines[i + 1..].iter().position(|l| *l == close) {
            out.push((name, end + 2));
        }
    }
    out
}

#[test]
fn function_lengths_are_read_from_fn_to_its_closing_brace() {
    let code = "fn a() {\n    x;\n}\n    pub(crate) fn b(\n        y: u8,\n    ) {\n    }\n";
    assert_eq!(
        function_lengths(code),
        [("a".to_owned(), 3), ("b".to_owned(), 4)]
    );
}

/// No function of any crate is over 100 lines (tests aside): a reader holds one in view.
#[test]
fn no_function_is_over_100_lines() {
    let mut long = Vec::new();
    for krate in [
        "engine",
        "postgres",
        "formats",
        "reference",
        "workload",
        "tools/sessdb",
        "bindings/node",
    ] {
        let root = src(krate);
        let mut files_list = Vec::new();
        walk(&root, &mut files_list);
        for f in files_list {
            let text = std::fs::read_to_string(&f).unwrap();
            let code = text
                .find("#[cfg(test)]\nmod tests")
                .map_or(text.as_str(), |i| &text[..i]);
            for (name, len) in function_lengths(code) {
                if len > 100 {
                    let file = f.strip_prefix(&root).unwrap().display();
                    long.push(format!("{krate}/{file}: {name} {len}"));
                }
            }
        }
    }
    assert!(long.is_empty(), "{long:#?}");
}

/// docs/DESIGN.md's module map names every file of `engine/src/store`, and only files that
/// exist (before: it left out five and named none that was gone, but nothing checked).
#[test]
fn the_design_map_names_every_store_file() {
    let doc = include_str!("../../docs/DESIGN.md");
    let mut named = std::collections::BTreeSet::new();
    let mut rest = doc;
    while let Some(at) = rest.find("`store/") {
        let tail = &rest[at + 1..];
        let end = tail.find('`').unwrap_or(0);
        let name = &tail[..end];
        if name.ends_with(".rs") {
            named.insert(name.to_owned());
        }
        rest = &tail[end..];
    }
    let root = src("engine");
    let mut files_list = Vec::new();
    walk(&root.join("store"), &mut files_list);
    let files: std::collections::BTreeSet<String> = files_list
        .iter()
        .map(|f| {
            f.strip_prefix(&root)
                .unwrap()
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        })
        .collect();
    let missing: Vec<_> = files.difference(&named).collect();
    let absent: Vec<_> = named.difference(&files).collect();
    assert!(
        missing.is_empty() && absent.is_empty(),
        "not in DESIGN.md's map: {missing:?}; named there but no such file: {absent:?}"
    );
}
