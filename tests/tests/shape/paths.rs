//! The crate's public paths: every `pub` item reachable from the root through `pub mod`
//! and `pub use`, and the paths by which each one is reachable.

use std::collections::{BTreeMap, BTreeSet};

use super::tree::{Crate, ModPath, Target};

/// The public paths of each public item.
#[derive(Debug, Default)]
pub struct PublicPaths {
    /// Each item reachable from outside, with every path that reaches it.
    pub items: BTreeMap<Target, BTreeSet<String>>,
    /// Each public module with the number of public names it holds itself (its own
    /// items and re-exports; not its modules).
    pub names_per_module: BTreeMap<String, usize>,
}

impl PublicPaths {
    /// Walks the crate from its root.
    pub fn of(krate: &Crate) -> PublicPaths {
        let mut paths = PublicPaths::default();
        let mut seen = BTreeSet::new();
        paths.walk(krate, &Vec::new(), &Vec::new(), &mut seen);
        paths
    }

    /// Items reachable by more than one path outside the prelude.
    pub fn doubles(&self) -> Vec<(String, Vec<String>)> {
        self.items
            .iter()
            .filter_map(|(target, paths)| {
                let outside: Vec<String> = paths
                    .iter()
                    .filter(|p| !p.starts_with("prelude::"))
                    .cloned()
                    .collect();
                (outside.len() > 1).then(|| (describe(target), outside))
            })
            .collect()
    }

    fn walk(
        &mut self,
        krate: &Crate,
        module: &ModPath,
        shown: &ModPath,
        seen: &mut BTreeSet<(ModPath, ModPath)>,
    ) {
        if !seen.insert((module.clone(), shown.clone())) {
            return;
        }
        let Some(this) = krate.modules.get(module) else {
            return;
        };
        let mut own = 0;
        for (name, defined) in &this.items {
            if defined.public {
                own += 1;
                let target = Target::Item {
                    module: module.clone(),
                    name: name.clone(),
                };
                self.record(target, shown, name);
            }
        }
        for (name, public) in &this.children {
            if *public {
                let child: ModPath = module.iter().chain([name]).cloned().collect();
                let shown_child: ModPath = shown.iter().chain([name]).cloned().collect();
                self.walk(krate, &child, &shown_child, seen);
            }
        }
        for import in this.imports.iter().filter(|i| i.public) {
            let names: Vec<(String, Vec<String>)> = match &import.name {
                Some(name) => vec![(name.clone(), import.target.clone())],
                None => glob_names(krate, &import.target),
            };
            for (name, target_path) in names {
                match krate.resolve(&target_path) {
                    Some(Target::Module(m)) => {
                        let shown_child: ModPath = shown.iter().chain([&name]).cloned().collect();
                        self.walk(krate, &m, &shown_child, seen);
                    }
                    Some(target) => {
                        own += 1;
                        self.record(target, shown, &name);
                    }
                    None => {}
                }
            }
        }
        let key = if shown.is_empty() {
            "(root)".to_owned()
        } else {
            shown.join("::")
        };
        self.names_per_module.insert(key, own);
    }

    fn record(&mut self, target: Target, shown: &ModPath, name: &str) {
        let path = shown
            .iter()
            .map(String::as_str)
            .chain([name])
            .collect::<Vec<_>>()
            .join("::");
        self.items.entry(target).or_default().insert(path);
    }
}

/// The public names of the module a glob import names, each with its full path.
fn glob_names(krate: &Crate, target: &[String]) -> Vec<(String, Vec<String>)> {
    let Some(Target::Module(m)) = krate.resolve(target) else {
        return Vec::new();
    };
    let Some(module) = krate.modules.get(&m) else {
        return Vec::new();
    };
    let mut names: Vec<String> = module
        .items
        .iter()
        .filter(|(_, d)| d.public)
        .map(|(n, _)| n.clone())
        .chain(
            module
                .children
                .iter()
                .filter(|(_, p)| **p)
                .map(|(n, _)| n.clone()),
        )
        .chain(
            module
                .imports
                .iter()
                .filter(|i| i.public)
                .filter_map(|i| i.name.clone()),
        )
        .collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|n| {
            let full = m.iter().chain([&n]).cloned().collect();
            (n, full)
        })
        .collect()
}

fn describe(target: &Target) -> String {
    match target {
        Target::Item { module, name } => {
            format!("{name} (defined in crate::{})", module.join("::"))
        }
        Target::Module(m) => format!("module crate::{}", m.join("::")),
    }
}
