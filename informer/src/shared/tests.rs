use std::sync::{Arc, Barrier};

use super::table::Table;
use super::*;
use crate::allocator::{allocation, count};

/// A value type of one test only: its table counts nothing of another test's.
macro_rules! own_type {
    ($name:ident) => {
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        struct $name(String);
        impl $name {
            #[allow(dead_code)] // not every test makes one from a string
            fn of(s: impl Into<String>) -> Self {
                $name(s.into())
            }
        }
    };
}

#[test]
fn equal_values_are_stored_once_and_others_apart() {
    own_type!(Word);
    let a = Shared::new(Word::of("node-1"));
    let b = Shared::new(Word::of("node-1"));
    let c = Shared::new(Word::of("node-2"));
    assert!(Shared::ptr_eq(&a, &b));
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert!(a < c, "ordered by value");
    assert_eq!(*a, Word::of("node-1"));
    assert_eq!(Table::<Word>::get().len(), 2);
    let d = a.clone();
    assert!(Shared::ptr_eq(&d, &b));
    assert_eq!(Table::<Word>::get().len(), 2);
}

#[test]
fn the_last_handle_frees_the_value_and_its_slot() {
    own_type!(Label);
    let first: Vec<Shared<Label>> = (0..1000)
        .map(|i| Shared::new(Label::of(format!("v{i}"))))
        .collect();
    let second: Vec<Shared<Label>> = (0..1000)
        .map(|i| Shared::new(Label::of(format!("v{i}"))))
        .collect();
    assert!(first.iter().zip(&second).all(|(a, b)| Shared::ptr_eq(a, b)));
    assert_eq!(Table::<Label>::get().len(), 1000);
    drop(first);
    assert_eq!(
        Table::<Label>::get().len(),
        1000,
        "still held by the second handles"
    );
    drop(second);
    assert_eq!(
        Table::<Label>::get().len(),
        0,
        "the last handles freed every value"
    );
    // Stored anew after that.
    let again = Shared::new(Label::of("v1"));
    assert_eq!(*again, Label::of("v1"));
    assert_eq!(Table::<Label>::get().len(), 1);
}

#[test]
fn strings_compare_with_str_and_print_as_themselves() {
    let phase = Shared::new("Running".to_owned());
    assert_eq!(phase, "Running");
    assert!(phase == *"Running");
    assert_eq!(phase.to_string(), "Running");
    assert_eq!(format!("{phase:?}"), "\"Running\"");
    assert_eq!(serde_json::to_string(&phase).unwrap(), "\"Running\"");
    let decoded: Shared<String> = serde_json::from_str("\"Running\"").unwrap();
    assert!(Shared::ptr_eq(&decoded, &phase));
    let set: std::collections::HashSet<Shared<String>> = [phase.clone()].into();
    let running = String::from("Running");
    assert!(set.contains(&running), "found by the value it borrows as");
}

#[test]
fn a_decode_error_stores_nothing() {
    own_type!(Bad);
    impl<'de> serde::Deserialize<'de> for Bad {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            String::deserialize(d).map(Bad)
        }
    }
    let refused = serde_json::from_str::<Shared<Bad>>("17");
    assert!(refused.is_err());
    assert_eq!(Table::<Bad>::get().len(), 0);
}

#[test]
fn a_decoded_value_is_counted_once_apart_from_the_object() {
    own_type!(Image);
    impl<'de> serde::Deserialize<'de> for Image {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            // As the decoder's adapter counts a string built into a `String`.
            let s = String::deserialize(d)?;
            count(s.len());
            Ok(Image(s))
        }
    }
    let image = "registry.example/app:1.2.3";
    let ((first, second), object) = measured(|| {
        let first: Shared<Image> = serde_json::from_str(&format!("\"{image}\"")).unwrap();
        let second: Shared<Image> = serde_json::from_str(&format!("\"{image}\"")).unwrap();
        (first, second)
    });
    assert_eq!(
        object, 0,
        "the object counts none of a shared value's bytes"
    );
    assert!(Shared::ptr_eq(&first, &second));
    let arc = allocation(2 * size_of::<usize>() + size_of::<Entry<Image>>());
    assert!(first.0.bytes as usize >= arc + allocation(image.len()));
    // Other tests store values at the same time: the entry is in the total at least.
    let after = shared_size();
    assert!(after.values >= 1 && after.bytes >= first.0.bytes);
}

#[test]
fn racing_interns_and_drops_neither_lose_nor_keep_a_value() {
    own_type!(Node);
    const THREADS: usize = 4;
    let start = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                start.wait();
                for round in 0..2_000 {
                    // Few values, so that threads meet on each: a handle that goes
                    // while another thread looks the value up.
                    let held: Vec<Shared<Node>> = (0..8)
                        .map(|i| Shared::new(Node::of(format!("n{}", (i + round + t) % 10))))
                        .collect();
                    let again = Shared::new(Node::of(format!("n{}", (round + t) % 10)));
                    assert!(Shared::ptr_eq(&held[0], &again), "one value, one entry");
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(
        Table::<Node>::get().len(),
        0,
        "every value went with its last handle"
    );
}

#[test]
fn a_shared_value_may_hold_shared_values() {
    own_type!(Name);
    #[derive(Debug, PartialEq, Eq, Hash)]
    struct Container {
        name: Shared<Name>,
    }
    let a = Shared::new(vec![Container {
        name: Shared::new(Name::of("app")),
    }]);
    let b = Shared::new(vec![Container {
        name: Shared::new(Name::of("app")),
    }]);
    assert!(Shared::ptr_eq(&a, &b));
    assert_eq!(Table::<Name>::get().len(), 1);
    drop((a, b));
    assert_eq!(
        Table::<Name>::get().len(),
        0,
        "the inner value went with the outer one"
    );
    assert_eq!(Table::<Vec<Container>>::get().len(), 0);
}
