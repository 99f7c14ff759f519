//! client-go: tools/cache/object-names_test.go (ObjectName is our ObjectKey)

use informer::key::ObjectKey;

/// A deterministic pseudo-random generator (xorshift), so a failure can be replayed.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

// client-go: object-names_test.go TestObjectNames
// Differs by design: a key with an empty namespace or name ("/a", "a/") is rejected
// rather than parsed, since no object has such a key.
#[test]
fn object_names() {
    const CHARS: &[u8] = b"abcdefghi/";
    let mut state = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..1000 {
        let encoded: String = (0..10)
            .map(|_| char::from(CHARS[(next(&mut state) % CHARS.len() as u64) as usize]))
            .collect();
        let parts: Vec<&str> = encoded.split('/').collect();
        let parsed = ObjectKey::parse(&encoded);
        let valid = parts.len() <= 2 && parts.iter().all(|p| !p.is_empty());
        assert_eq!(parsed.is_ok(), valid, "{encoded:?}: {parsed:?}");
        let Ok(key) = parsed else { continue };
        let expected = match parts[..] {
            [namespace, name] => ObjectKey::namespaced(namespace, name),
            _ => ObjectKey::cluster_scoped(encoded.clone()),
        };
        assert_eq!(key, expected);
        // Parse then display is the identity.
        assert_eq!(key.to_string(), encoded);
    }
}
