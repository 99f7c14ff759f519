//! The library's structure, read from its source (no server): imports point down the
//! layers (docs/layout.md) without circles between modules, submodules or files, each
//! public name has one path, and the public surface stays under its written ceiling.

mod shape;

use std::path::Path;

use shape::tree::Crate;

fn library() -> Crate {
    Crate::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../informer/src"))
}

/// Circles known and left alone, each with why; the test fails once one is gone, so
/// the list only shrinks. Empty: keep it so.
const KNOWN_CIRCLES: &[(&[&str], &str)] = &[];

#[test]
fn imports_point_down_the_layers_without_circles() {
    let mut report = shape::layers::check(&library());
    for (known, why) in KNOWN_CIRCLES {
        let at = report.file_circles.iter().position(|c| c == known);
        let at = at.unwrap_or_else(|| {
            panic!("the known circle {known:?} is gone: drop it from KNOWN_CIRCLES")
        });
        println!(
            "  known circle, left alone ({why}): {}",
            known.join(" <-> ")
        );
        report.file_circles.remove(at);
        report
            .circle_edges
            .retain(|e| !known.iter().any(|f| e.starts_with(f)));
    }
    println!(
        "upward imports: {} (between {} pairs of modules); circles between modules: {}; \
         circles between the submodules of a module: {}; circles between the files of a \
         module: {}",
        report.upward.len(),
        report.upward_modules.len(),
        report.module_circles.len(),
        report.submodule_circles.len(),
        report.file_circles.len()
    );
    for up in &report.upward {
        println!("  up: {up}");
    }
    for circle in &report.module_circles {
        println!("  module circle: {}", circle.join(" <-> "));
    }
    for circle in &report.submodule_circles {
        println!("  submodule circle: {}", circle.join(" <-> "));
    }
    for circle in &report.file_circles {
        println!("  file circle: {}", circle.join(" <-> "));
    }
    for edge in &report.circle_edges {
        println!("  import in a circle: {edge}");
    }
    assert!(
        report.upward.is_empty()
            && report.module_circles.is_empty()
            && report.submodule_circles.is_empty()
            && report.file_circles.is_empty(),
        "imports must point down the layers, without circles (see above)"
    );
}

/// The most public items (each counted once, the prelude's aside) the library may
/// have: the surface is a cost every user pays, so it grows only by a decision made
/// here. 236 before the front-door work of 2026-12 (issue 45), 233 after it; 236 with
/// issue 48's shared values (`projection::Shared`, and `shared_size` with its
/// `SharedSize`: values counted once for the process belong to no one informer's
/// `CacheSize`); 238 with issue 45's typed shard selector (`reflector::ShardSelector`
/// and its `ShardField`), which a key filter returns where it returned a string the
/// reflector parsed back. Still 238 with issue 45's `reflector::source` split: what a
/// source can do became one `Capabilities` value in place of six trait methods, and
/// `ReflectorStats` went private (a reflector's counters are read as its
/// `StatsSnapshot`). 234 once the consistency checks' version seam reads through the
/// source's own request, page, event and stream types (`ListRequest`, `ListPage`,
/// `WatchEvent`, `WatchStream` of `ObjectVersion`) in place of four look-alikes. 233
/// once the two derives' walks are one (`Step` in mode `Keys` or `Check`, in place of
/// `Step` and `Opt`, each with its two traits). Still 233 with the factory's one door
/// for a type's settings (`factory::ByObject`, in place of four `*_for::<K>()`
/// setters), as `NamedKeyFilter` went private (a `Selection` is built by its methods
/// and carries its filter from `filtered`). 235 with issue 48's `object::Object` and
/// `object::Meta`: the library's bounds rest on what the cache reads of an object, so
/// that an object need not carry a whole `ObjectMeta` (a `kube::Resource` is an
/// `Object` with nothing to implement). 236 with `projection::CompactMeta`, the
/// metadata in the layout that serves the cache (texts inline, repeating values
/// shared), which a projection names as its `metadata` field's type. 238 with the
/// informable derive's hidden `MetaRoot` and `CompactFields`, through which an index
/// path into `metadata` walks a `CompactMeta` by `ObjectMeta`'s field names.
const PUBLIC_ITEMS_CEILING: usize = 238;

/// The most names the prelude may hold: an operator's path, not a second index.
const PRELUDE_CEILING: usize = 15;

#[test]
fn each_public_name_has_one_path_outside_the_prelude() {
    let paths = shape::paths::PublicPaths::of(&library());
    let outside_prelude = paths
        .items
        .values()
        .filter(|p| p.iter().any(|p| !p.starts_with("prelude::")))
        .count();
    println!("public items (each counted once): {outside_prelude}");
    for (module, count) in &paths.names_per_module {
        println!("  {module}: {count} public names");
    }
    if std::env::var_os("PRINT_PUBLIC_PATHS").is_some() {
        for path in paths.items.values().flatten() {
            println!("  path: {path}");
        }
    }
    let doubles = paths.doubles();
    for (item, paths) in &doubles {
        println!("  double: {item}: {}", paths.join(", "));
    }
    assert!(
        doubles.is_empty(),
        "{} public items have more than one path (see above)",
        doubles.len()
    );
    assert!(
        outside_prelude <= PUBLIC_ITEMS_CEILING,
        "{outside_prelude} public items, over the ceiling of {PUBLIC_ITEMS_CEILING}: make an item \
         private, or raise the ceiling in this test as a decision (and say why)"
    );
    if outside_prelude < PUBLIC_ITEMS_CEILING {
        println!("  below the ceiling: lower PUBLIC_ITEMS_CEILING to {outside_prelude}");
    }
    let prelude = paths.names_per_module.get("prelude").copied().unwrap_or(0);
    assert!(
        prelude <= PRELUDE_CEILING,
        "the prelude has {prelude} names, over its ceiling of {PRELUDE_CEILING}"
    );
}
