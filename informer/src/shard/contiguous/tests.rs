use super::*;
use crate::reflector::{ShardField, ShardSelector};
use crate::shard::ranges::BucketRun;
use crate::shard::ring::{Layout, View};

/// `count` identities, a different set for each `trial`.
fn identities(trial: u64, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("replica-{trial}-{i}")).collect()
}

fn view(identities: &[String]) -> View {
    View::of(Layout::Ranges, identities)
}

/// The holder of every bucket in `view`.
fn holder_table(view: &View) -> Vec<String> {
    (0..BUCKETS)
        .map(|bucket| view.holder(bucket << 53).unwrap().to_owned())
        .collect()
}

/// The share of the buckets whose holder differs between `a` and `b`.
fn moved(a: &View, b: &View) -> f64 {
    let (a, b) = (holder_table(a), holder_table(b));
    let moved = a.iter().zip(&b).filter(|(x, y)| x != y).count();
    moved as f64 / BUCKETS as f64
}

#[test]
fn every_member_holds_exactly_its_quota_and_every_bucket_has_a_holder() {
    for count in 1..=12 {
        for trial in 0..20 {
            let ids = identities(trial, count);
            let view = view(&ids);
            let table = holder_table(&view);
            assert_eq!(table.len(), BUCKETS as usize);
            let mut sorted = ids.clone();
            sorted.sort();
            for (rank, id) in sorted.iter().enumerate() {
                let owned = table.iter().filter(|holder| *holder == id).count();
                let quota = BUCKETS as usize / count + usize::from(rank < BUCKETS as usize % count);
                assert_eq!(owned, quota, "{count} members, {id}");
                let runs: u64 = view.runs_of(id).iter().map(|r| r.end - r.first).sum();
                assert_eq!(runs, quota as u64);
            }
        }
    }
    // Past 2,048 members, some hold nothing, and no bucket is held twice.
    let crowd = identities(7, 2100);
    let table = holder_table(&view(&crowd));
    let distinct: std::collections::BTreeSet<&String> = table.iter().collect();
    assert_eq!(distinct.len(), 2048);
}

#[test]
fn a_share_is_a_few_runs() {
    for count in 1..=8 {
        let (mut total, mut worst) = (0, 0);
        for trial in 0..100 {
            let ids = identities(trial, count);
            let view = view(&ids);
            for id in &ids {
                let runs = view.runs_of(id).len();
                assert!(runs <= GROUPS, "{runs}");
                worst = worst.max(runs);
                total += runs;
            }
        }
        let mean = total as f64 / (100 * count) as f64;
        eprintln!("{count} members: {mean:.1} runs on average, {worst} at most");
        // Rendezvous hashing per bucket gives a member of two about 512 runs.
        assert!(mean <= 12.0, "{count} members: {mean} runs on average");
        if count == 1 {
            assert_eq!(worst, 1, "a lone member holds the whole space");
        } else {
            assert!(worst <= 20, "{count} members: {worst} runs");
        }
    }
}

#[test]
fn every_member_computes_the_same_holders() {
    let ids = identities(3, 5);
    let reference = holder_table(&view(&ids));
    let mut reversed = ids.clone();
    reversed.reverse();
    assert_eq!(holder_table(&view(&reversed)), reference);
    let annotation = format!(" {} ,{},{}", ids[3], ids.join(","), ids[0]);
    assert_eq!(
        holder_table(&View::parse(Layout::Ranges, &annotation)),
        reference
    );
    // The holders are the protocol: fixed for fixed identities.
    let fixed = view(&["a".to_owned(), "b".to_owned(), "c".to_owned()]);
    let runs = |id: &str| {
        fixed
            .runs_of(id)
            .iter()
            .map(|r| (r.first, r.end))
            .collect::<Vec<_>>()
    };
    assert_eq!(runs("a").iter().map(|(f, e)| e - f).sum::<u64>(), 683);
    assert_eq!(runs("b").iter().map(|(f, e)| e - f).sum::<u64>(), 683);
    assert_eq!(runs("c").iter().map(|(f, e)| e - f).sum::<u64>(), 682);
    assert_eq!(
        runs("a"),
        [
            (320, 406),
            (512, 576),
            (704, 896),
            (960, 1088),
            (1152, 1216),
            (1344, 1408),
            (1835, 1856),
            (1920, 1984)
        ]
    );
    assert_eq!(
        runs("c"),
        [
            (64, 128),
            (406, 448),
            (576, 704),
            (1088, 1152),
            (1216, 1344),
            (1472, 1600),
            (1664, 1792)
        ]
    );
}

/// Joins and leaves move about `1/N` of the buckets: on average at most 1.5 times
/// what must move (the newcomer's share, or the leaver's), and never more than 3
/// times; the newcomer takes exactly its quota, the leaver's buckets all go.
#[test]
fn a_join_or_a_leave_moves_about_one_nth() {
    for count in 2..=5 {
        let (mut joins, mut leaves) = (0.0, 0.0);
        let trials = 60;
        for trial in 0..trials {
            let ids = identities(100 + trial, count + 1);
            let before = view(&ids[..count]);
            let after = view(&ids);
            let must = 1.0 / (count + 1) as f64;
            let join = moved(&before, &after) / must;
            assert!((0.99..3.0).contains(&join), "{count} + 1: {join}");
            joins += join;
            // One of the `count` leaves.
            let leaver = usize::try_from(trial).unwrap() % count;
            let rest: Vec<String> = ids[..count]
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != leaver)
                .map(|(_, id)| id.clone())
                .collect();
            let left = view(&rest);
            let leave = moved(&before, &left) / (1.0 / count as f64);
            assert!((0.99..3.0).contains(&leave), "{count} - 1: {leave}");
            leaves += leave;
            assert!(left.runs_of(&ids[leaver]).is_empty());
        }
        let (join, leave) = (joins / trials as f64, leaves / trials as f64);
        eprintln!(
            "{count} members: a join moves {join:.2}, a leave {leave:.2} times 1/N on average"
        );
        assert!(join <= 1.5, "{count} + 1 moves {join} times 1/N on average");
        assert!(
            leave <= 1.5,
            "{count} - 1 moves {leave} times 1/N on average"
        );
    }
}

/// The longest selector: 32 ranges over the longer field, apart (so that none
/// merge), the last ending at the top of the space (the longest hex form). What
/// members really send is much shorter: printed here, and bounded.
#[test]
fn a_selector_stays_short() {
    let selector = |runs: &[BucketRun]| {
        ShardSelector::new(ShardField::Namespace, runs.iter().map(|run| run.hashes())).to_query()
    };
    let apart: Vec<BucketRun> = (0..GROUPS as u64)
        .map(|i| BucketRun {
            first: BUCKETS - 1 - 2 * i,
            end: BUCKETS - 2 * i,
        })
        .collect();
    let longest = selector(&apart);
    assert_eq!(longest.matches("shardRange(").count(), GROUPS);
    let encoded = |s: &str| {
        form_urlencoded::Serializer::new(String::new())
            .append_pair("shardSelector", s)
            .finish()
            .len()
    };
    eprintln!(
        "at most: {} bytes ({} in the URL)",
        longest.len(),
        encoded(&longest)
    );
    assert!(longest.len() <= 2_800, "{}", longest.len());
    assert!(encoded(&longest) <= 3_400, "{}", encoded(&longest));
    for count in [2, 3, 5] {
        let (mut bytes, mut in_url, mut ranges) = (0, 0, 0);
        for trial in 0..200 {
            let ids = identities(1_000 + trial, count);
            let view = view(&ids);
            for id in &ids {
                let runs = view.runs_of(id);
                let text = selector(&runs);
                ranges = ranges.max(runs.len());
                bytes = bytes.max(text.len());
                in_url = in_url.max(encoded(&text));
            }
        }
        eprintln!(
            "{count} members: the longest selector of 200 groups has {ranges} ranges, \
             {bytes} bytes ({in_url} in the URL) by namespace"
        );
        assert!(in_url <= 2_200, "{count} members: {in_url}");
    }
}
/// The hand-off test on the real server (`shard_handoffs.rs`) bounds what moves
/// between the stayers when `b` leaves `a, b, c`; this pins it: 22 of the stayers'
/// 1,365 buckets (1.6%), besides all of b's.
#[test]
fn b_leaving_a_b_c_moves_few_of_the_stayers_buckets() {
    let ids = |names: &[&str]| names.iter().map(ToString::to_string).collect::<Vec<_>>();
    let three = holder_table(&view(&ids(&["a", "b", "c"])));
    let two = holder_table(&view(&ids(&["a", "c"])));
    let stayers = three.iter().filter(|holder| *holder != "b").count();
    let moved = three
        .iter()
        .zip(&two)
        .filter(|(before, after)| *before != "b" && before != after)
        .count();
    assert_eq!((stayers, moved), (1_365, 22));
}
