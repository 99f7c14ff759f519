//! The one walk both derives generate through a value of the user's type, one step
//! at a time: [`Step`] with the [`StepInto`] / [`StepStay`] pair picks, by method
//! resolution rather than by the derive guessing at types, whether a value is one to
//! look into or one to stop at. (A `(&Step(..)).step(..)` call finds `StepInto` on
//! `Step` itself where an impl applies, before trying `StepStay` on `&Step`.)
//!
//! What a walk looks into is its mode, the step's second field:
//! - [`Keys`], an index function's walk from an object to its keys: into `Option`,
//!   lists, sets, arrays and [`Shared`], since every element is a key;
//! - [`Check`], the projection check's walk along the original type: into an `Option`
//!   only, since a list or a map of the original is a step of its own there, and
//!   stepping into one where the projection has an `Option` would let
//!   `Option<T>` stand for a `Vec<T>`.
//!
//! Re-exported, hidden, by the derives' runtimes (`informable::__private`,
//! `projection::__private`): what the generated code names.

use std::collections::{BTreeSet, HashSet};
use std::hash::Hash;

use crate::shared::Shared;

/// A value on a derive's walk through a user's type, in mode `M` ([`Keys`] or
/// [`Check`]).
pub struct Step<'a, T: ?Sized, M>(pub &'a T, pub M);

/// The walk of an index function, from an object to its keys.
#[derive(Clone, Copy)]
pub struct Keys;

/// The walk of the projection check, along the original type.
#[derive(Clone, Copy)]
pub struct Check;

/// Into what a value holds: chosen over [`StepStay`] by method resolution where the
/// mode looks into the value's type.
pub trait StepInto<'a> {
    /// What the value holds.
    type Item: ?Sized + 'a;
    /// Calls `f` with each value held (none for an empty one).
    fn step(&self, f: &mut dyn FnMut(&'a Self::Item));
}

/// Any other value is where the step stops.
pub trait StepStay<'a> {
    /// The value's type.
    type Item: ?Sized + 'a;
    /// Calls `f` with the value.
    fn step(&self, f: &mut dyn FnMut(&'a Self::Item));
}

impl<'a, T: ?Sized + 'a, M> StepStay<'a> for &Step<'a, T, M> {
    type Item = T;
    fn step(&self, f: &mut dyn FnMut(&'a T)) {
        f(self.0);
    }
}

/// Both walks look into an `Option`.
impl<'a, T: 'a, M> StepInto<'a> for Step<'a, Option<T>, M> {
    type Item = T;
    fn step(&self, f: &mut dyn FnMut(&'a T)) {
        if let Some(value) = self.0 {
            f(value);
        }
    }
}

macro_rules! keys_into_elements {
    ($($container:ty),* $(,)?) => {$(
        impl<'a, T: 'a> StepInto<'a> for Step<'a, $container, Keys> {
            type Item = T;
            fn step(&self, f: &mut dyn FnMut(&'a T)) {
                for value in self.0 {
                    f(value);
                }
            }
        }
    )*};
}

keys_into_elements!(Vec<T>, [T], BTreeSet<T>);

impl<'a, T: 'a, S: 'a> StepInto<'a> for Step<'a, HashSet<T, S>, Keys> {
    type Item = T;
    fn step(&self, f: &mut dyn FnMut(&'a T)) {
        for value in self.0 {
            f(value);
        }
    }
}

impl<'a, T: 'a, const N: usize> StepInto<'a> for Step<'a, [T; N], Keys> {
    type Item = T;
    fn step(&self, f: &mut dyn FnMut(&'a T)) {
        for value in self.0 {
            f(value);
        }
    }
}

/// Into the value a [`Shared`] holds: an index path reads through it as through the
/// value. (The projection check needs no step here: the derive reads the projected
/// type's `Shared` and checks what it holds against the original's value itself.)
impl<'a, T: Eq + Hash + Send + Sync + 'static> StepInto<'a> for Step<'a, Shared<T>, Keys> {
    type Item = T;
    fn step(&self, f: &mut dyn FnMut(&'a T)) {
        f(self.0);
    }
}

// The calls are written as the derives generate them, `(&Step(..)).step(..)`, where
// the borrow is what lets one expansion fit every type.
#[cfg(test)]
#[allow(clippy::needless_borrow)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_walk_looks_into_containers_and_stops_at_a_key() {
        let list = vec![Some("a".to_owned()), None, Some("b".to_owned())];
        let mut seen = Vec::new();
        (&Step(&list, Keys)).step(&mut |element| {
            (&Step(element, Keys)).step(&mut |value: &String| seen.push(value.clone()));
        });
        assert_eq!(seen, ["a", "b"]);

        let text = "key".to_owned();
        let mut stayed = Vec::new();
        (&Step(&text, Keys)).step(&mut |value: &String| stayed.push(value.clone()));
        assert_eq!(
            stayed,
            ["key"],
            "a string is a key, not a list of characters"
        );
    }

    #[test]
    fn the_check_walk_looks_into_an_option_but_not_a_list() {
        let some = Some(vec![1, 2]);
        let mut held = Vec::new();
        (&Step(&some, Check)).step(&mut |value: &Vec<i32>| held.push(value.len()));
        assert_eq!(held, [2], "into the Option, stopping at the list");

        let list = vec![1, 2, 3];
        let mut stayed = Vec::new();
        (&Step(&list, Check)).step(&mut |value: &Vec<i32>| stayed.push(value.len()));
        assert_eq!(stayed, [3], "a list is where the check's step stops");

        let none: Option<u8> = None;
        let mut called = false;
        (&Step(&none, Check)).step(&mut |_| called = true);
        assert!(!called);
    }
}
