//! The layer rule (docs/layout.md, "The library's floors"): an import points down the
//! layer list, never up, and no two modules, nor two submodules of one module, nor two
//! files of one module, import each other (directly or round a circle).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::tree::{Crate, circles};

/// The layer list of docs/layout.md, bottom floor first; a module may import from its
/// own floor and the floors below. The crate root and the prelude sit on top.
///
/// Two moves from the list as DESIGN.md first drew it, because the imports say so: the
/// lister (typed reads of a store) sits below `shared_informer`, which hands one out,
/// and `dynamic` (discovery and JSONPath indexes, over the store) below `factory`,
/// which builds dynamic informers from it.
const LAYERS: &[&[&str]] = &[
    &[
        "key",
        "object",
        "lock",
        "panic",
        "cause",
        "cached",
        "scope",
        "synced",
        "claim",
        "clock",
        "allocator",
        "shared",
        "compact_meta",
        "walk",
        "hold",
    ],
    &["reflector", "events", "leader", "workqueue", "testenv"],
    &["store", "shard"],
    &[
        "fifo",
        "informable",
        "projection",
        "lister",
        "dynamic",
        "consistency",
    ],
    &["shared_informer"],
    &["metrics"],
    &["factory"],
    &["controller"],
    &["fleet"],
    &["", "prelude"],
];

fn floor(module: &str) -> usize {
    LAYERS
        .iter()
        .position(|f| f.contains(&module))
        .unwrap_or_else(|| panic!("module `{module}` is not in the layer list; add it"))
}

/// What the check found.
#[derive(Debug, Default)]
pub struct Report {
    /// `from file -> to file (path)` for every import that points up.
    pub upward: BTreeSet<String>,
    /// `(from module, to module)` pairs among them.
    pub upward_modules: BTreeSet<(String, String)>,
    /// Circles between top-level modules.
    pub module_circles: Vec<Vec<String>>,
    /// Circles between the files of one module.
    pub file_circles: Vec<Vec<String>>,
    /// Circles between the submodules of one module, at any depth (`controller::context`
    /// and `controller::replication`, each with every file under it): what the file
    /// graph misses when a circle goes through two files of one submodule.
    pub submodule_circles: Vec<Vec<String>>,
    /// The imports that close each circle: `from -> to (path)` between its members.
    pub circle_edges: BTreeSet<String>,
}

/// Reads the crate and checks every import against the layers.
pub fn check(krate: &Crate) -> Report {
    let mut report = Report::default();
    let mut module_edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut file_edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    let mut submodule_edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut why: BTreeMap<(String, String), String> = BTreeMap::new();
    let top = |file: &std::path::Path| -> String {
        let rel = file.strip_prefix(&krate.root).unwrap_or(file);
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .into_owned();
        if first == "lib.rs" {
            String::new()
        } else {
            first.trim_end_matches(".rs").to_owned()
        }
    };
    for (file, mentions) in &krate.mentions {
        for path in mentions {
            let Some(target) = krate.resolve(path) else {
                continue;
            };
            let Some(to_file) = krate.file_of(&target) else {
                continue;
            };
            if to_file == file {
                continue;
            }
            let (from, to) = (top(file), top(to_file));
            why.entry((krate.name(file), krate.name(to_file)))
                .or_insert_with(|| format!("crate::{}", path.join("::")));
            if from == to {
                file_edges
                    .entry(file.clone())
                    .or_default()
                    .insert(to_file.to_path_buf());
                if let Some((a, b)) = submodules_apart(krate, file, to_file) {
                    submodule_edges.entry(a).or_default().insert(b);
                }
                continue;
            }
            why.entry((from.clone(), to.clone()))
                .or_insert_with(|| format!("{}: crate::{}", krate.name(file), path.join("::")));
            module_edges
                .entry(from.clone())
                .or_default()
                .insert(to.clone());
            if floor(&to) > floor(&from) {
                report.upward.insert(format!(
                    "{} -> {} (crate::{})",
                    krate.name(file),
                    krate.name(to_file),
                    path.join("::")
                ));
                report.upward_modules.insert((from, to));
            }
        }
    }
    report.module_circles = circles(&module_edges);
    report.file_circles = circles(&file_edges)
        .into_iter()
        .map(|c| c.iter().map(|f| krate.name(f)).collect())
        .collect();
    report.submodule_circles = circles(&submodule_edges);
    for circle in report.module_circles.iter().chain(&report.file_circles) {
        for ((from, to), path) in &why {
            if circle.contains(from) && circle.contains(to) {
                report
                    .circle_edges
                    .insert(format!("{from} -> {to} ({path})"));
            }
        }
    }
    report
}

/// The two submodules, children of the deepest module that holds both files, that the
/// files `from` and `to` lie in (`controller::context`, `controller::replication`);
/// `None` when one file is that module's own (its `mod.rs`), which its children may
/// import and be imported by.
fn submodules_apart(
    krate: &Crate,
    from: &std::path::Path,
    to: &std::path::Path,
) -> Option<(String, String)> {
    let parts = |file: &std::path::Path| -> Vec<String> {
        let rel = file.strip_prefix(&krate.root).unwrap_or(file);
        let mut parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let last = parts.pop().unwrap_or_default();
        if last != "mod.rs" {
            parts.push(last.trim_end_matches(".rs").to_owned());
        }
        parts
    };
    let (a, b) = (parts(from), parts(to));
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if common == 0 || common >= a.len() || common >= b.len() {
        return None;
    }
    let name = |p: &[String]| p[..=common].join("::");
    Some((name(&a), name(&b)))
}
