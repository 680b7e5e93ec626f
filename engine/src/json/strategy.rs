//! Proptest strategies for JSON text (test-only), shared by the codec property tests.

use proptest::prelude::*;

/// A JSON string literal with escapes, non-ASCII and surrogate pairs.
pub(crate) fn json_string() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            "[a-zA-Z0-9 ]{0,6}".prop_map(|s| s),
            Just("\\n".to_owned()),
            Just("\\\"".to_owned()),
            Just("\\u00e9".to_owned()),
            Just("\\ud83d\\ude00".to_owned()),
            Just("é€😀".to_owned()),
        ],
        0..4,
    )
    .prop_map(|parts| format!("\"{}\"", parts.concat()))
}

/// A JSON number that is lossless (finite, not negative zero).
pub(crate) fn json_number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        (1u32..1000, 0u32..100).prop_map(|(a, b)| format!("{a}.{b}")),
        (1u32..9, -300i32..300).prop_map(|(a, e)| format!("{a}e{e}")),
    ]
}

/// Compact JSON text of any shape, nested at most a few levels.
pub(crate) fn json_value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("false".to_owned()),
        json_number(),
        json_string(),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6)
                .prop_map(|v| format!("[{}]", v.join(","))),
            proptest::collection::vec((json_string(), inner), 0..6).prop_map(|v| {
                let members: Vec<String> = v.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}
