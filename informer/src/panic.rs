//! What the crate reports of a panic it caught in user code (a handler, a transform, a
//! reconcile): the payload's message, whichever of the two string types `panic!` used.

use std::any::Any;

/// The message of a caught panic's payload.
pub(crate) fn message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("<non-string panic payload>")
}

#[cfg(test)]
mod tests {
    use super::message;

    #[test]
    fn message_reads_static_and_formatted_payloads() {
        let caught = |f: fn()| std::panic::catch_unwind(f).expect_err("it panics");
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let literal = caught(|| panic!("plain"));
        let formatted = caught(|| panic!("with {}", 42));
        let other = caught(|| std::panic::panic_any(7_u8));
        std::panic::set_hook(previous);
        assert_eq!(message(literal.as_ref()), "plain");
        assert_eq!(message(formatted.as_ref()), "with 42");
        assert_eq!(message(other.as_ref()), "<non-string panic payload>");
    }
}
