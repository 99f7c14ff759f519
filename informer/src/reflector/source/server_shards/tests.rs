use std::collections::VecDeque;

use super::*;
use crate::reflector::{FnKeyFilter, KeyFilter};

const HALF: &str = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";

/// The lower half of the hash space by uid (its query is [`HALF`]).
fn half() -> ShardSelector {
    ShardSelector::new(ShardField::Uid, Some(0..1 << 63))
}

/// The whole hash space by uid.
fn whole() -> ShardSelector {
    ShardSelector::new(ShardField::Uid, Some(0..1 << 64))
}

fn status(code: u16, reason: &str, message: &str) -> kube::Error {
    kube::Error::Api(
        kube::core::Status::failure(message, reason)
            .with_code(code)
            .boxed(),
    )
}

/// A server's refusal of the shard selector parameter.
fn refusal() -> kube::Error {
    status(400, "BadRequest", "unknown parameter")
}

/// A proxy's 414, as kube reads a body that is not a Status.
fn too_long(code: u16) -> kube::Error {
    status(
        code,
        "Failed to parse error data",
        "<html>\r\n<head><title>414 Request-URI Too Large</title></head>\r\n<body>\r\n<center><h1>414 Request-URI Too Large</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>",
    )
}

/// `future`'s output, on a runtime of this thread.
fn block_on<T>(future: impl Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

struct Selecting;

impl KeyFilter for Selecting {
    fn keeps(&self, _namespace: Option<&str>, _name: &str) -> bool {
        true
    }
    fn generation(&self) -> tokio::sync::watch::Receiver<u64> {
        tokio::sync::watch::Sender::new(0).subscribe()
    }
    fn server_selector(&self) -> Option<ShardSelector> {
        Some(half())
    }
}

fn selecting() -> SharedKeyFilter {
    SharedKeyFilter::new(Arc::new(Selecting))
}

/// A request at `step`, answered by `answers` in turn: what the caller got, and the
/// selector each try carried.
fn request(
    shards: &ServerShards,
    step: Step,
    answers: Vec<Result<(), kube::Error>>,
) -> (Result<(), kube::Error>, Vec<Option<String>>) {
    let filter = selecting();
    let selector = shards.selector(Some(&filter), step);
    let answers = Mutex::new(VecDeque::from(answers));
    let sent = Mutex::new(Vec::new());
    let query = selector.as_ref().map(ShardSelector::to_query);
    let answer = block_on(shards.send("widgets", query.as_deref(), |selector| {
        sent.locked().push(selector.map(str::to_owned));
        let answer = answers
            .locked()
            .pop_front()
            .expect("an answer for each try");
        std::future::ready(answer)
    }));
    assert!(answers.locked().is_empty(), "every answer was asked for");
    let sent = sent.into_inner().unwrap();
    (answer, sent)
}

/// What a try without the selector carried.
const WITHOUT: Option<String> = None;

/// What a try with the selector carried.
fn with() -> Option<String> {
    Some(HALF.to_owned())
}

/// The selector offered and still sent.
fn offered() -> Option<ShardSelector> {
    Some(half())
}

#[test]
fn a_selector_is_offered_only_by_a_filter_that_has_one() {
    let shards = ServerShards::default();
    let plain = SharedKeyFilter::new(Arc::new(FnKeyFilter::new(|_, _| true)));
    assert!(shards.selector(None, Step::Starts).is_none());
    assert!(shards.selector(Some(&plain), Step::Starts).is_none());
    assert_eq!(
        shards.selector(Some(&selecting()), Step::Continues),
        offered()
    );
    // Without a selector, a request goes once, as it is, whatever it gets.
    let answer = block_on(shards.send("widgets", None, |selector| {
        assert!(selector.is_none());
        std::future::ready(Err::<(), _>(refusal()))
    }));
    assert!(answer.is_err());
}

/// 414 and 431: the same request again without the selector, which stays off for the
/// rest of the list (its later pages, the watch from it) and is tried again when the
/// next list starts; answered, it stays on.
#[test]
fn a_414_or_431_falls_back_until_the_next_list_and_a_success_turns_it_back_on() {
    for code in [414, 431] {
        let shards = ServerShards::default();
        let (answer, sent) = request(&shards, Step::Starts, vec![Err(too_long(code)), Ok(())]);
        assert!(answer.is_ok(), "{code}");
        assert_eq!(sent, [with(), WITHOUT]);
        assert_eq!(
            shards.still_sent(offered()),
            None,
            "the answer is to no selector"
        );
        assert_eq!(shards.said(), Some(false), "everything arrives");
        // The list's next page and its watch: without, at once.
        let (_, sent) = request(&shards, Step::Continues, vec![Ok(())]);
        assert_eq!(sent, [WITHOUT]);
        // The next relist tries it again, and it goes through: on again.
        let (answer, sent) = request(&shards, Step::Starts, vec![Ok(())]);
        assert!(answer.is_ok());
        assert_eq!(sent, [with()]);
        assert_eq!(shards.still_sent(offered()), offered());
        let (_, sent) = request(&shards, Step::Continues, vec![Ok(())]);
        assert_eq!(sent, [with()]);
        // Refused at a relist, it falls back again (even though it went through once).
        let (answer, sent) = request(&shards, Step::Starts, vec![Err(too_long(code)), Ok(())]);
        assert!(answer.is_ok());
        assert_eq!(sent, [with(), WITHOUT]);
    }
}

/// A 400 to the first request carrying the selector turns it off; a 400 once one
/// was answered is another error, returned as it is, the selector still on.
#[test]
fn a_400_turns_it_off_only_as_the_answer_to_the_first_request_carrying_it() {
    let shards = ServerShards::default();
    let (answer, sent) = request(&shards, Step::Starts, vec![Err(refusal()), Ok(())]);
    assert!(answer.is_ok());
    assert_eq!(sent, [with(), WITHOUT]);
    let (_, sent) = request(&shards, Step::Continues, vec![Ok(())]);
    assert_eq!(sent, [WITHOUT]);
    // At the next relist it is the first again: refused again, off again.
    let (_, sent) = request(&shards, Step::Starts, vec![Err(refusal()), Ok(())]);
    assert_eq!(sent, [with(), WITHOUT]);
    // Then taken.
    let (_, sent) = request(&shards, Step::Starts, vec![Ok(())]);
    assert_eq!(sent, [with()]);
    // A later 400 (a bad label selector, say): the caller's error, nothing retried.
    let bad_labels = status(400, "BadRequest", "unable to parse requirement");
    let (answer, sent) = request(&shards, Step::Continues, vec![Err(bad_labels)]);
    assert_eq!(
        answer.unwrap_err().to_string(),
        status(400, "BadRequest", "unable to parse requirement").to_string()
    );
    assert_eq!(sent, [with()]);
    let (_, sent) = request(&shards, Step::Continues, vec![Ok(())]);
    assert_eq!(sent, [with()], "still on");
}

/// An error naming the shard selector turns it off whenever it comes, whatever its
/// status.
#[test]
fn an_error_naming_the_selector_turns_it_off_whenever_it_comes() {
    let invalid = || {
        status(
            500,
            "",
            "invalid shard selector: hexStart must be 0x and 16 hex digits",
        )
    };
    let mut details = kube::core::Status::failure("Widget is invalid", "Invalid").with_code(422);
    details.details = Some(kube::core::response::StatusDetails {
        name: "widgets".into(),
        group: "example.com".into(),
        kind: "widgets".into(),
        uid: String::new(),
        causes: vec![kube::core::response::StatusCause {
            reason: "FieldValueInvalid".into(),
            message: "too many ranges".into(),
            field: "shardSelector".into(),
        }],
        retry_after_seconds: 0,
    });
    let by_field = kube::Error::Api(details.boxed());
    for error in [invalid(), by_field] {
        let shards = ServerShards::default();
        let (_, sent) = request(&shards, Step::Starts, vec![Ok(())]);
        assert_eq!(sent, [with()]);
        let (answer, sent) = request(&shards, Step::Continues, vec![Err(error), Ok(())]);
        assert!(answer.is_ok());
        assert_eq!(sent, [with(), WITHOUT]);
        assert_eq!(shards.still_sent(offered()), None);
    }
}

#[test]
fn other_errors_go_back_to_the_reflector_with_the_selector_still_on() {
    let refused = kube::Error::Service(Box::new(std::io::Error::new(
        std::io::ErrorKind::ConnectionRefused,
        "Connection refused (os error 111)",
    )));
    let errors = [
        status(500, "InternalError", "etcdserver: request timed out"),
        status(403, "Forbidden", "widgets is forbidden"),
        status(401, "Unauthorized", "Unauthorized"),
        status(410, "Expired", "too old resource version: 5 (10)"),
        status(429, "TooManyRequests", "slow down"),
        refused,
    ];
    for error in errors {
        let shards = ServerShards::default();
        let line = error.to_string();
        let (answer, sent) = request(&shards, Step::Starts, vec![Err(error)]);
        assert_eq!(answer.unwrap_err().to_string(), line);
        assert_eq!(sent, [with()], "{line}");
        assert_eq!(
            shards.selector(Some(&selecting()), Step::Continues),
            offered()
        );
        assert_eq!(shards.said(), None);
    }
}

#[test]
fn a_streaming_lists_initial_events_tell_whether_the_server_filtered() {
    let shards = Arc::new(ServerShards::default());
    let mut initial = InitialEvents::new(Arc::clone(&shards), "widgets", half());
    let added = || Ok::<_, kube::Error>(WatchEvent::Added(()));
    for _ in 0..40 {
        assert!(!initial.ended_by(&added()));
    }
    assert_eq!(
        shards.said(),
        None,
        "nothing said before the initial events end"
    );
    assert!(initial.ended_by(&Ok(WatchEvent::<()>::initial_events_end("7"))));
    assert_eq!(shards.said(), Some(true));

    let mut initial = InitialEvents::new(Arc::clone(&shards), "widgets", half());
    assert!(!initial.ended_by(&added()));
    assert!(!initial.ended_by(&Ok(WatchEvent::<()>::filtered_out("8"))));
    assert!(initial.ended_by(&Ok(WatchEvent::<()>::initial_events_end("9"))));
    assert_eq!(shards.said(), Some(false));
}

#[test]
fn the_server_filtered_if_it_says_so_or_nothing_arrived_to_drop() {
    let shards = ServerShards::default();
    shards.listed("widgets", &half(), false, 10, 0);
    assert_eq!(shards.said(), None, "too few objects to tell");
    shards.listed("widgets", &whole(), false, 1000, 0);
    assert_eq!(shards.said(), None, "everything asked for: nothing to tell");
    let by_namespace = ShardSelector::new(ShardField::Namespace, Some(0..1 << 63));
    shards.listed("widgets", &by_namespace, false, 1000, 0);
    assert_eq!(shards.said(), None, "by namespace, only a drop tells");
    shards.listed("widgets", &half(), false, 1000, 0);
    assert_eq!(shards.said(), Some(true));
    shards.listed("widgets", &half(), false, 10, 3);
    assert_eq!(shards.said(), Some(false));
    shards.listed("widgets", &half(), true, 0, 0);
    assert_eq!(shards.said(), Some(true));
}

/// The lines logged on this thread while `run` runs, without time or colour.
fn logged(run: impl FnOnce()) -> Vec<String> {
    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Lines {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.locked().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::INFO)
        .without_time()
        .with_ansi(false)
        .finish();
    tracing::subscriber::with_default(subscriber, run);
    let text = String::from_utf8(lines.0.locked().clone()).unwrap();
    text.lines().map(str::to_owned).collect()
}

#[test]
fn what_the_server_does_is_said_once_at_info_and_again_only_when_it_changes() {
    let shards = ServerShards::default();
    let lines = logged(|| {
        shards.listed("widgets", &half(), false, 10, 0);
        shards.listed("widgets", &half(), false, 1000, 0);
        shards.listed("widgets", &half(), false, 1000, 0);
        shards.listed("widgets", &half(), true, 0, 0);
        shards.listed("widgets", &half(), false, 10, 3);
        shards.listed("widgets", &half(), false, 1000, 1);
        shards.listed("widgets", &half(), true, 5, 0);
        let relist = |answers| assert!(request(&shards, Step::Starts, answers).0.is_ok());
        // Refused twice (two relists), then through: said once each way.
        relist(vec![Err(refusal()), Ok(())]);
        relist(vec![Err(refusal()), Ok(())]);
        relist(vec![Ok(())]);
        relist(vec![Ok(())]);
        shards.listed("widgets", &half(), false, 1000, 0);
        // Too long at a proxy, twice.
        relist(vec![Err(too_long(414)), Ok(())]);
        relist(vec![Err(too_long(414)), Ok(())]);
    });
    let expected = [
        "filters this collection by shard",
        "does not filter by shard (sharded list and watch needs Kubernetes 1.36+ with the ShardedListAndWatch feature gate)",
        "filters this collection by shard",
        "refused the shard selector",
        "the shard selector goes through again",
        "filters this collection by shard",
        "too long for the way to the API server",
    ];
    assert_eq!(lines.len(), expected.len(), "{lines:#?}");
    for (line, says) in lines.iter().zip(expected) {
        assert!(line.starts_with(" INFO "), "{line}");
        assert!(line.contains(says), "{line} should say {says}");
        assert!(line.contains(r#"resource="widgets""#), "{line}");
    }
    assert!(
        lines[3].contains("error=400 BadRequest: unknown parameter"),
        "{}",
        lines[3]
    );
    assert!(
        lines[6].contains("error=414 Request-URI Too Large"),
        "{}",
        lines[6]
    );
}
