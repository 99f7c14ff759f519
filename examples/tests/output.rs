//! The examples print what their docs say, against a real API server.

use std::process::Command;

use informer::testenv::TestEnv;

/// Runs an example binary against the shared control plane; returns its stdout.
async fn run_example(binary: &'static str) -> String {
    let env = TestEnv::shared().await.unwrap();
    let kubeconfig = env.kubeconfig_path().to_owned();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(binary)
            .env("KUBECONFIG", kubeconfig)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "{binary} failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[tokio::test]
async fn quickstart_prints_adds_then_deletes() {
    let stdout = run_example(env!("CARGO_BIN_EXE_quickstart")).await;
    assert_eq!(
        stdout,
        "Added: demo\nAdded: demo2\nDeleted: demo2\nDeleted: demo\n"
    );
}

/// The embedded control plane (no kubeconfig) runs what `KUBEBUILDER_ASSETS` names, as
/// controller-runtime's envtest does: here the 1.33 binaries the install built, with
/// building forbidden, and the quickstart prints the same four lines on it.
#[tokio::test]
async fn the_embedded_control_plane_runs_the_binaries_kubebuilder_assets_names() {
    use informer::testenv::Kubernetes;
    // Installs the 1.33 binaries if they are not yet.
    drop(
        TestEnv::builder()
            .kubernetes(Kubernetes::V1_33)
            .start()
            .await
            .unwrap(),
    );
    let cache = std::env::var_os("INFORMER_CACHE_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(&std::env::var_os("HOME").unwrap()).join(".cache/informer-testenv")
        });
    let assets = cache
        .join("k8s")
        .join(format!("{}-linux-amd64", Kubernetes::V1_33.release()));
    let output = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_quickstart"))
            .env("INFORMER_EMBEDDED", "1")
            .env("KUBEBUILDER_ASSETS", assets)
            .env("INFORMER_TESTENV_NO_INSTALL", "1")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        stdout,
        "Added: demo\nAdded: demo2\nDeleted: demo2\nDeleted: demo\n"
    );
    assert!(
        stderr.contains("The embedded control plane runs Kubernetes v1.33.13"),
        "{stderr}"
    );
}

#[tokio::test]
async fn deployments_prints_handler_events_and_the_listed_namespace() {
    let stdout = run_example(env!("CARGO_BIN_EXE_deployments")).await;
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{stdout}");
    // The initial adds come in the order of the server's list, which the API leaves
    // open (a list served from the watch cache, or a streaming list, need not be
    // sorted).
    let mut initial = lines[..2].to_vec();
    initial.sort_unstable();
    assert_eq!(initial, ["Added: api", "Added: web"], "{stdout}");
    assert_eq!(
        lines[2..],
        [
            "Listed 2 deployments: api, web",
            "Updated: web (replicas 1 -> 3)",
            "Deleted: api"
        ],
        "{stdout}"
    );
}

#[tokio::test]
async fn controller_retries_the_flaky_pod_and_notices_the_deleted_one() {
    let stdout = run_example(env!("CARGO_BIN_EXE_controller")).await;
    let lines: Vec<&str> = stdout.lines().collect();
    let position = |line: &str| {
        lines
            .iter()
            .position(|l| *l == line)
            .unwrap_or_else(|| panic!("{line:?} missing from:\n{stdout}"))
    };
    // Two workers interleave the Pods; each Pod's own story is in order.
    assert!(
        position("Error syncing Pod flaky (attempt 1); retrying")
            < position("Error syncing Pod flaky (attempt 2); retrying")
    );
    assert!(
        position("Error syncing Pod flaky (attempt 2); retrying")
            < position("Sync/Add/Update for Pod flaky")
    );
    assert!(position("Sync/Add/Update for Pod web") < position("Pod web does not exist anymore"));
    assert!(!stdout.contains("attempt 3"), "flaky fails exactly twice");
    // Its own /metrics endpoint, scraped at the end, tells the same story.
    let scraped = position(r#"workqueue_retries_total{name="pod-controller"} 2"#);
    assert!(position("Pod web does not exist anymore") < scraped);
    position(r#"workqueue_depth{name="pod-controller"} 0"#);
    // Two failed syncs of flaky. Every sync and cleanup printed succeeded: flaky, web
    // (once or twice: its deletion may first come as an update), web's cleanup. A
    // reconcile with nothing to do counts as a success too: one that runs after the
    // deletion reached the cache but before it reached the controller's handler.
    position(r#"controller_runtime_reconcile_total{controller="pod-controller",result="error"} 2"#);
    let successes: usize = lines
        .iter()
        .find_map(|l| {
            l.strip_prefix(
                r#"controller_runtime_reconcile_total{controller="pod-controller",result="success"} "#,
            )
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no success count in:\n{stdout}"));
    let printed = lines
        .iter()
        .filter(|l| l.starts_with("Sync/Add/Update") || l.ends_with("does not exist anymore"))
        .count();
    assert!((3..=4).contains(&printed), "{stdout}");
    assert!(successes >= printed, "{stdout}");
}

#[tokio::test]
async fn crd_controller_reconciles_kits_from_index_queries() {
    let stdout = run_example(env!("CARGO_BIN_EXE_crd_controller")).await;
    let lines: Vec<&str> = stdout.lines().collect();
    let moved = lines
        .iter()
        .position(|l| *l == "Moving spring to kit-a")
        .unwrap_or_else(|| panic!("no move in:\n{stdout}"));
    let (before, after) = lines.split_at(moved);
    // Kits are reconciled in any order, maybe more than once: what each kit saw last
    // before and after the move is the story.
    let last = |lines: &[&str], kit: &str| {
        lines
            .iter()
            .rev()
            .find(|l| l.starts_with(&format!("{kit} has")))
            .map(|l| l.to_string())
    };
    assert_eq!(
        last(before, "kit-a").as_deref(),
        Some("kit-a has 2 parts, total size 2: bolt (red), nut (red)"),
        "{stdout}"
    );
    assert_eq!(
        last(before, "kit-b").as_deref(),
        Some("kit-b has 2 parts, total size 4: gear (blue), spring (red)"),
        "{stdout}"
    );
    assert!(
        before.contains(&"Red widgets: bolt, kit-a, nut, spring"),
        "{stdout}"
    );
    assert!(before.contains(&"Size 3 widgets: kit-a, kit-b"), "{stdout}");
    assert_eq!(
        last(after, "kit-a").as_deref(),
        Some("kit-a has 3 parts, total size 4: bolt (red), nut (red), spring (red)"),
        "{stdout}"
    );
    assert_eq!(
        last(after, "kit-b").as_deref(),
        Some("kit-b has 1 part, total size 2: gear (blue)"),
        "{stdout}"
    );
}

/// Both Backup operators, ours and kube-runtime's, tell the same story.
async fn backup_operator_story(binary: &'static str) {
    let stdout = run_example(binary).await;
    assert_eq!(
        stdout,
        "nightly-copy holds greeting=hello\n\
         settings changed: nightly-copy holds greeting=bonjour\n\
         nightly deleted: its copy was cleaned up\n"
    );
}

#[tokio::test]
async fn backup_operator_copies_follows_and_cleans_up() {
    backup_operator_story(env!("CARGO_BIN_EXE_backup_operator")).await;
}

#[tokio::test]
async fn backup_operator_on_kube_runtime_does_the_same() {
    backup_operator_story(env!("CARGO_BIN_EXE_backup_operator_kube_runtime")).await;
}

/// Both ports of Kubernetes' sample-controller, ours and kube-runtime's, tell the same
/// story.
async fn sample_controller_story(binary: &'static str) {
    let stdout = run_example(binary).await;
    assert_eq!(
        stdout,
        "example-foo created: Deployment example-foo, 1 replica, controlled by the Foo\n\
         1 replica of Deployment example-foo available: example-foo's status says 1\n\
         example-foo scaled to 3: so is Deployment example-foo\n\
         Deployment example-foo edited to 5 replicas: put back to 3\n\
         other-foo wants Deployment foreign: Warning ErrResourceExists: \
         Resource \"foreign\" already exists and is not managed by Foo\n\
         Deployment foreign untouched: 2 replicas, no owner\n\
         example-foo: Normal Synced: Foo synced successfully\n"
    );
}

#[tokio::test]
async fn sample_controller_owns_scales_and_refuses_a_foreign_deployment() {
    sample_controller_story(env!("CARGO_BIN_EXE_sample_controller")).await;
}

#[tokio::test]
async fn sample_controller_on_kube_runtime_does_the_same() {
    sample_controller_story(env!("CARGO_BIN_EXE_sample_controller_kube_runtime")).await;
}

#[tokio::test]
async fn leader_controller_hands_over_from_one_replica_to_the_other() {
    let stdout = run_example(env!("CARGO_BIN_EXE_leader_controller")).await;
    assert_eq!(
        stdout,
        "replica-1 leads\n\
         replica-1 stamped settings\n\
         replica-2 follows replica-1\n\
         replica-1 stopped and released the lease\n\
         replica-2 leads\n\
         replica-2 stamped settings\n"
    );
}

#[tokio::test]
async fn sharded_controller_splits_the_config_maps_as_replicas_come_and_go() {
    let stdout = run_example(env!("CARGO_BIN_EXE_sharded_controller")).await;
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    // The counts depend on the namespace's (random) name, part of every key.
    let shares = |line: &str, prefix: &str| -> Vec<(String, usize)> {
        let rest = line
            .strip_prefix(prefix)
            .unwrap_or_else(|| panic!("{line}"));
        rest.split(", ")
            .map(|share| {
                let (name, count) = share.rsplit_once(' ').unwrap();
                (name.to_owned(), count.parse().unwrap())
            })
            .collect()
    };
    let three = shares(lines[0], "3 replicas share 30 ConfigMaps: ");
    let two = shares(lines[1], "replica-3 left, the others took its ConfigMaps: ");
    let joined = shares(lines[2], "replica-4 joined and took its share: ");
    let names =
        |shares: &[(String, usize)]| shares.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&three), ["replica-1", "replica-2", "replica-3"]);
    assert_eq!(names(&two), ["replica-1", "replica-2"]);
    assert_eq!(names(&joined), ["replica-1", "replica-2", "replica-4"]);
    for split in [&three, &two, &joined] {
        assert_eq!(split.iter().map(|(_, c)| c).sum::<usize>(), 30, "{stdout}");
    }
    // Rendezvous hashing: a leave moves only the leaver's keys (the others only
    // gain), a join only takes from the others (they only lose).
    for i in 0..2 {
        assert!(two[i].1 >= three[i].1, "{stdout}");
        assert!(joined[i].1 <= two[i].1, "{stdout}");
    }
}

#[tokio::test]
async fn fleet_addon_keeps_the_addon_in_every_cluster_as_clusters_come_and_go() {
    let stdout = run_example(env!("CARGO_BIN_EXE_fleet_addon")).await;
    assert_eq!(
        stdout,
        "cluster-a has addon v1\n\
         cluster-b has addon v1\n\
         Secret broken-kubeconfig rejected: invalid kubeconfig\n\
         cluster-offline cannot be reached: troubled() names it, the others did not wait\n\
         template changed: cluster-a has addon v2, cluster-b has addon v2\n\
         addon edited in cluster-a, deleted in cluster-b: both put back at v2\n\
         cluster-c joined: cluster-c has addon v2\n\
         cluster-b left: its addon stays at v2, no longer managed\n\
         fleet-wide view: cluster-a v2, cluster-c v2\n"
    );
}

#[tokio::test]
async fn pod_images_lists_by_image_from_a_projection_and_prints_its_cost() {
    let stdout = run_example(env!("CARGO_BIN_EXE_pod_images")).await;
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{stdout}");
    assert_eq!(
        lines[..4],
        [
            "Cached 3 Pods as PodView",
            "Pods running nginx:1.27: web-0 (node-1, Pending), web-1 (node-1, Pending)",
            "Updated: web-1 runs nginx:1.28 in container app",
            "Pods running nginx:1.27: web-0 (node-1, Pending)",
        ],
        "{stdout}"
    );
    // The last line's figures are estimates; the projection's are the smaller.
    let figures: Vec<u64> = lines[4]
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    assert_eq!(figures.len(), 4, "{stdout}");
    assert_eq!((figures[0], figures[2]), (3, 3), "{stdout}");
    assert!(0 < figures[1] && figures[1] * 2 < figures[3], "{stdout}");
}
