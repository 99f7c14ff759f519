//! The library's module tree, read from `informer/src` with `syn`: which module each
//! file holds, what each module defines and imports, and how a path resolves to the
//! file that defines its item. Test code (`#[cfg(test)]`) is left out; every
//! `#[cfg(feature = ..)]` counts as on (all features).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::{Attribute, Item, Meta, UseTree, Visibility};

/// A module path from the crate root: `["reflector", "decode"]`; the root is `[]`.
pub type ModPath = Vec<String>;

/// One `use` name: `use a::b::c as d;` is `name` d, `target` crate::a::b::c.
#[derive(Debug, Clone)]
pub struct Import {
    /// The name it binds (`None` for a glob).
    pub name: Option<String>,
    /// The absolute path it names (without `crate`).
    pub target: Vec<String>,
    /// `pub use` (a re-export for the crate's users).
    pub public: bool,
}

/// A named item a module defines.
#[derive(Debug, Clone)]
pub struct Defined {
    /// `pub` (not `pub(crate)` or narrower).
    pub public: bool,
    /// The file it is written in.
    pub file: PathBuf,
}

/// One module of the crate.
#[derive(Debug, Default)]
pub struct Module {
    /// The file that holds the module's own items.
    pub file: PathBuf,
    /// Child modules by name, and whether each is `pub mod`.
    pub children: BTreeMap<String, bool>,
    /// Items it defines, by name (structs, enums, traits, functions, ...).
    pub items: BTreeMap<String, Defined>,
    /// Its `use` declarations.
    pub imports: Vec<Import>,
}

/// The whole crate: modules by path, and the crate paths each file mentions.
#[derive(Debug, Default)]
pub struct Crate {
    /// The directory of `lib.rs`.
    pub root: PathBuf,
    /// Every module outside test code.
    pub modules: BTreeMap<ModPath, Module>,
    /// For each file, the absolute crate paths it names (in `use` and in code).
    pub mentions: BTreeMap<PathBuf, Vec<Vec<String>>>,
}

/// Where a path leads: an item defined in a file, or a module.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Target {
    /// The item `name` defined in module `module`.
    Item { module: ModPath, name: String },
    /// A module.
    Module(ModPath),
}

impl Crate {
    /// Reads the crate whose `lib.rs` is in `src`.
    pub fn read(src: &Path) -> Crate {
        let mut krate = Crate {
            root: src.to_path_buf(),
            ..Crate::default()
        };
        let lib = src.join("lib.rs");
        let file = parse(&lib);
        krate.add_module(Vec::new(), &lib, src, &file.items);
        krate
    }

    /// The file, relative to `src`, as text (`reflector/watch.rs`).
    pub fn name(&self, file: &Path) -> String {
        file.strip_prefix(&self.root)
            .unwrap_or(file)
            .display()
            .to_string()
    }

    fn add_module(&mut self, path: ModPath, file: &Path, child_dir: &Path, items: &[Item]) {
        let mut module = Module {
            file: file.to_path_buf(),
            ..Module::default()
        };
        let mut mentions = Vec::new();
        // Children first: a `use` may name a child module declared below it.
        for item in items {
            if let Item::Mod(m) = item
                && enabled(&m.attrs)
            {
                module.children.insert(m.ident.to_string(), is_pub(&m.vis));
            }
        }
        for item in items {
            if !enabled(item_attrs(item)) {
                continue;
            }
            match item {
                Item::Mod(m) => {
                    let name = m.ident.to_string();
                    let mut child = path.clone();
                    child.push(name.clone());
                    if let Some((_, inline)) = &m.content {
                        self.add_module(child, file, &child_dir.join(&name), inline);
                    } else {
                        let at = path_attr(&m.attrs);
                        let (child_file, grand_dir) = match at {
                            Some(rel) => {
                                let f = file.parent().unwrap().join(rel);
                                let d = f.with_extension("");
                                (f, d)
                            }
                            None => {
                                let flat = child_dir.join(format!("{name}.rs"));
                                if flat.exists() {
                                    (flat, child_dir.join(&name))
                                } else {
                                    (child_dir.join(&name).join("mod.rs"), child_dir.join(&name))
                                }
                            }
                        };
                        let parsed = parse(&child_file);
                        self.add_module(child, &child_file, &grand_dir, &parsed.items);
                    }
                }
                Item::Use(u) => {
                    let mut found = Vec::new();
                    flatten_use(&u.tree, Vec::new(), &mut found);
                    // A re-export publishes a name; it is not something the module
                    // itself depends on, so it draws no import arrow.
                    let reexport = !matches!(u.vis, Visibility::Inherited);
                    for (segments, name) in found {
                        if let Some(target) = absolute(&path, &segments, &module) {
                            if !reexport {
                                mentions.push(target.clone());
                            }
                            module.imports.push(Import {
                                name,
                                target,
                                public: is_pub(&u.vis),
                            });
                        }
                    }
                }
                Item::Impl(_) | Item::ForeignMod(_) | Item::Verbatim(_) => {}
                _ => {
                    if let Some((name, public)) = item_name(item) {
                        module.items.insert(
                            name,
                            Defined {
                                public,
                                file: file.to_path_buf(),
                            },
                        );
                    }
                }
            }
            if !matches!(item, Item::Mod(_) | Item::Use(_)) {
                let mut tokens = TokenStream::new();
                quote::ToTokens::to_tokens(item, &mut tokens);
                for segments in crate_paths(tokens) {
                    if let Some(target) = absolute(&path, &segments, &module) {
                        mentions.push(target);
                    }
                }
            }
        }
        self.mentions
            .entry(file.to_path_buf())
            .or_default()
            .extend(mentions);
        self.modules.insert(path, module);
    }

    /// Resolves an absolute path to what it names, following re-exports; `None` for a
    /// path that leaves the crate or names something this reader does not model (an
    /// enum variant, a method).
    pub fn resolve(&self, path: &[String]) -> Option<Target> {
        self.resolve_in(&[], path, 0)
    }

    fn resolve_in(&self, module: &[String], rest: &[String], depth: usize) -> Option<Target> {
        if depth > 32 {
            return None;
        }
        let Some((first, tail)) = rest.split_first() else {
            return Some(Target::Module(module.to_vec()));
        };
        let this = self.modules.get(module)?;
        if this.children.contains_key(first) {
            let mut child = module.to_vec();
            child.push(first.clone());
            return self.resolve_in(&child, tail, depth + 1);
        }
        if this.items.contains_key(first) {
            // `Type::method` or `Enum::Variant`: the item is what is named.
            return Some(Target::Item {
                module: module.to_vec(),
                name: first.clone(),
            });
        }
        for import in &this.imports {
            if import.name.as_deref() == Some(first.as_str()) {
                let mut target = import.target.clone();
                target.extend(tail.iter().cloned());
                if let Some(found) = self.resolve_in(&[], &target, depth + 1) {
                    return Some(found);
                }
            }
        }
        for import in this.imports.iter().filter(|i| i.name.is_none()) {
            let mut target = import.target.clone();
            target.extend(rest.iter().cloned());
            if let Some(found) = self.resolve_in(&[], &target, depth + 1) {
                return Some(found);
            }
        }
        None
    }

    /// The file a target is written in (a module's own file for a module).
    pub fn file_of(&self, target: &Target) -> Option<&Path> {
        match target {
            Target::Item { module, name } => self
                .modules
                .get(module)?
                .items
                .get(name)
                .map(|d| d.file.as_path()),
            Target::Module(module) => self.modules.get(module).map(|m| m.file.as_path()),
        }
    }
}

fn parse(file: &Path) -> syn::File {
    let text =
        std::fs::read_to_string(file).unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
    syn::parse_file(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", file.display()))
}

fn is_pub(vis: &Visibility) -> bool {
    matches!(vis, Visibility::Public(_))
}

fn path_attr(attrs: &[Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// Whether the `#[cfg]`s let an item in, with every feature on and `test` off.
fn enabled(attrs: &[Attribute]) -> bool {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .all(|a| match &a.meta {
            Meta::List(list) => list
                .parse_args::<Meta>()
                .map(|m| cfg_true(&m))
                .unwrap_or(true),
            _ => true,
        })
}

fn cfg_true(meta: &Meta) -> bool {
    let nested = |list: &syn::MetaList| -> Vec<Meta> {
        list.parse_args_with(syn::punctuated::Punctuated::<Meta, syn::Token![,]>::parse_terminated)
            .map(|p| p.into_iter().collect())
            .unwrap_or_default()
    };
    match meta {
        Meta::Path(p) => !(p.is_ident("test") || p.is_ident("docsrs") || p.is_ident("doc")),
        Meta::NameValue(_) => true,
        Meta::List(list) if list.path.is_ident("not") => !nested(list).iter().all(cfg_true),
        Meta::List(list) if list.path.is_ident("any") => nested(list).iter().any(cfg_true),
        Meta::List(list) => nested(list).iter().all(cfg_true),
    }
}

fn item_attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

fn item_name(item: &Item) -> Option<(String, bool)> {
    let (ident, vis) = match item {
        Item::Const(i) => (&i.ident, &i.vis),
        Item::Enum(i) => (&i.ident, &i.vis),
        Item::Fn(i) => (&i.sig.ident, &i.vis),
        Item::Static(i) => (&i.ident, &i.vis),
        Item::Struct(i) => (&i.ident, &i.vis),
        Item::Trait(i) => (&i.ident, &i.vis),
        Item::TraitAlias(i) => (&i.ident, &i.vis),
        Item::Type(i) => (&i.ident, &i.vis),
        Item::Union(i) => (&i.ident, &i.vis),
        Item::Macro(i) => {
            let exported = i.attrs.iter().any(|a| a.path().is_ident("macro_export"));
            return i.ident.as_ref().map(|id| (id.to_string(), exported));
        }
        _ => return None,
    };
    if ident == "_" {
        return None;
    }
    Some((ident.to_string(), is_pub(vis)))
}

/// `use a::{b, c::d as e, f::*}` as (segments, bound name) pairs.
fn flatten_use(tree: &UseTree, prefix: Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
    match tree {
        UseTree::Path(p) => {
            let mut next = prefix;
            next.push(p.ident.to_string());
            flatten_use(&p.tree, next, out);
        }
        UseTree::Name(n) => {
            let name = n.ident.to_string();
            if name == "self" {
                let bound = prefix.last().cloned();
                out.push((prefix, bound));
            } else {
                let mut full = prefix;
                full.push(name.clone());
                out.push((full, Some(name)));
            }
        }
        UseTree::Rename(r) => {
            let mut full = prefix;
            if r.ident != "self" {
                full.push(r.ident.to_string());
            }
            out.push((full, Some(r.rename.to_string())));
        }
        UseTree::Glob(_) => out.push((prefix, None)),
        UseTree::Group(g) => {
            for t in &g.items {
                flatten_use(t, prefix.clone(), out);
            }
        }
    }
}

/// A path written in module `at` as an absolute crate path, or `None` when it leaves
/// the crate (`std::..`, `kube::..`).
fn absolute(at: &[String], segments: &[String], module: &Module) -> Option<Vec<String>> {
    let first = segments.first()?;
    match first.as_str() {
        "crate" => Some(segments[1..].to_vec()),
        "self" => Some(at.iter().chain(&segments[1..]).cloned().collect()),
        "super" => {
            let mut base = at.to_vec();
            let mut rest = segments;
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
            base.extend(rest.iter().cloned());
            Some(base)
        }
        // A relative path into a child module declared before this `use`.
        name if module.children.contains_key(name) => {
            Some(at.iter().chain(segments).cloned().collect())
        }
        _ => None,
    }
}

/// Every `crate::a::b`, `super::a` and `self::a` path in some tokens.
fn crate_paths(tokens: TokenStream) -> Vec<Vec<String>> {
    let flat = flatten(tokens);
    let mut out = Vec::new();
    let mut i = 0;
    while i < flat.len() {
        let starts = matches!(&flat[i], Tok::Ident(s) if s == "crate" || s == "super" || s == "self")
            && !matches!(i.checked_sub(1).map(|j| &flat[j]), Some(Tok::ColonColon));
        if starts && matches!(flat.get(i + 1), Some(Tok::ColonColon)) {
            let mut segments = Vec::new();
            let mut j = i;
            while let Some(Tok::Ident(s)) = flat.get(j) {
                segments.push(s.clone());
                if matches!(flat.get(j + 1), Some(Tok::ColonColon)) {
                    j += 2;
                } else {
                    break;
                }
            }
            out.push(segments);
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

enum Tok {
    Ident(String),
    ColonColon,
    Other,
}

fn flatten(tokens: TokenStream) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut iter = tokens.into_iter().peekable();
    while let Some(tree) = iter.next() {
        match tree {
            TokenTree::Ident(id) => out.push(Tok::Ident(id.to_string())),
            TokenTree::Punct(p) if p.as_char() == ':' => {
                if matches!(iter.peek(), Some(TokenTree::Punct(q)) if q.as_char() == ':') {
                    iter.next();
                    out.push(Tok::ColonColon);
                } else {
                    out.push(Tok::Other);
                }
            }
            TokenTree::Group(g) => {
                out.push(Tok::Other);
                out.extend(flatten(g.stream()));
                out.push(Tok::Other);
            }
            _ => out.push(Tok::Other),
        }
    }
    out
}

/// Strongly connected components of more than one node (Tarjan's algorithm).
pub fn circles<N: Ord + Clone>(edges: &BTreeMap<N, BTreeSet<N>>) -> Vec<Vec<N>> {
    struct State<N> {
        index: BTreeMap<N, usize>,
        low: BTreeMap<N, usize>,
        stack: Vec<N>,
        on_stack: BTreeSet<N>,
        next: usize,
        found: Vec<Vec<N>>,
    }
    fn visit<N: Ord + Clone>(n: &N, edges: &BTreeMap<N, BTreeSet<N>>, s: &mut State<N>) {
        s.index.insert(n.clone(), s.next);
        s.low.insert(n.clone(), s.next);
        s.next += 1;
        s.stack.push(n.clone());
        s.on_stack.insert(n.clone());
        for m in edges.get(n).into_iter().flatten() {
            if !s.index.contains_key(m) {
                visit(m, edges, s);
                let low = s.low[n].min(s.low[m]);
                s.low.insert(n.clone(), low);
            } else if s.on_stack.contains(m) {
                let low = s.low[n].min(s.index[m]);
                s.low.insert(n.clone(), low);
            }
        }
        if s.low[n] == s.index[n] {
            let mut component = Vec::new();
            while let Some(m) = s.stack.pop() {
                s.on_stack.remove(&m);
                let done = &m == n;
                component.push(m);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    let nodes: BTreeSet<N> = edges
        .iter()
        .flat_map(|(k, v)| std::iter::once(k).chain(v))
        .cloned()
        .collect();
    for n in &nodes {
        if !state.index.contains_key(n) {
            visit(n, edges, &mut state);
        }
    }
    state.found.sort();
    state.found
}
