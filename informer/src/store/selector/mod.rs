//! Label selectors, explained in the [module docs](super#selector-grammar).

mod error;
mod label_selector;
mod operator;
mod parse;
mod requirement;
mod validate;

pub use error::SelectorError;
pub use label_selector::Selector;
pub use operator::Operator;
pub use requirement::Requirement;

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
        LabelSelector, LabelSelectorRequirement, ObjectMeta,
    };

    use super::*;

    /// A label map from pairs (also used by the parser's tests).
    pub(super) fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    #[test]
    fn matches_like_apimachinery() {
        let sel = Selector::parse("app=web,tier!=db,env in (a,b),!legacy,has").unwrap();
        assert!(sel.matches(&labels(&[("app", "web"), ("env", "b"), ("has", "")])));
        assert!(sel.matches(&labels(&[
            ("app", "web"),
            ("env", "a"),
            ("has", "1"),
            ("tier", "fe")
        ])));
        assert!(!sel.matches(&labels(&[
            ("app", "web"),
            ("env", "a"),
            ("has", ""),
            ("tier", "db")
        ])));
        assert!(!sel.matches(&labels(&[("app", "web"), ("env", "c"), ("has", "")])));
        assert!(!sel.matches(&labels(&[("app", "web"), ("env", "a")])));
        assert!(!sel.matches(&labels(&[
            ("app", "web"),
            ("env", "a"),
            ("has", ""),
            ("legacy", "")
        ])));
        let notin = Selector::parse("env notin (a)").unwrap();
        assert!(notin.matches(&labels(&[])), "notin matches an absent label");
        let num = Selector::parse("n>2,m<5").unwrap();
        assert!(num.matches(&labels(&[("n", "3"), ("m", "4")])));
        assert!(!num.matches(&labels(&[("n", "2"), ("m", "4")])));
        assert!(!num.matches(&labels(&[("n", "x"), ("m", "4")])));
        assert!(Selector::everything().matches(&labels(&[])));
    }

    #[test]
    fn display_is_canonical_and_parses_back() {
        for s in [
            "a=b,c notin (x,y),m<10,n>3",
            "app in (a,b,c),b!=,!x",
            "example.com/k=v",
        ] {
            let sel = Selector::parse(s).unwrap();
            assert_eq!(sel.to_string(), s);
            assert_eq!(Selector::parse(&sel.to_string()).unwrap(), sel);
        }
        assert_eq!(
            Selector::parse("b in (z,y,y),a==1").unwrap().to_string(),
            "a=1,b in (y,z)"
        );
    }

    #[test]
    fn converts_from_k8s_label_selector() {
        let ls = LabelSelector {
            match_labels: Some(labels(&[("app", "web")])),
            match_expressions: Some(vec![
                LabelSelectorRequirement {
                    key: "env".into(),
                    operator: "In".into(),
                    values: Some(vec!["a".into(), "b".into()]),
                },
                LabelSelectorRequirement {
                    key: "legacy".into(),
                    operator: "DoesNotExist".into(),
                    values: None,
                },
            ]),
        };
        let sel = Selector::try_from(&ls).unwrap();
        assert_eq!(
            sel,
            Selector::parse("app=web,env in (a,b),!legacy").unwrap()
        );
        assert_eq!(
            Selector::try_from(LabelSelector::default()).unwrap(),
            Selector::everything()
        );
        let bad_op = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "a".into(),
                operator: "in".into(),
                values: Some(vec!["x".into()]),
            }]),
            ..Default::default()
        };
        assert_eq!(
            Selector::try_from(&bad_op),
            Err(SelectorError::UnknownOperator("in".into()))
        );
        let empty_in = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "a".into(),
                operator: "In".into(),
                values: Some(vec![]),
            }]),
            ..Default::default()
        };
        assert!(matches!(
            Selector::try_from(&empty_in),
            Err(SelectorError::ValueCount { .. })
        ));
    }

    #[test]
    fn builders_and_object_matching() {
        let sel = Selector::from_labels([("app", "web")])
            .unwrap()
            .and(Requirement::is_in("env", ["b", "a"]).unwrap())
            .and(Requirement::does_not_exist("legacy").unwrap())
            .and(Requirement::not_equals("tier", "db").unwrap())
            .and(Requirement::exists("has").unwrap())
            .and(Requirement::not_in("zone", ["z"]).unwrap());
        assert_eq!(
            sel.to_string(),
            "app=web,env in (a,b),has,!legacy,tier!=db,zone notin (z)"
        );
        assert_eq!(sel.requires_exact_match("app"), Some("web"));
        assert_eq!(sel.requires_exact_match("env"), None);
        let mut cm = ConfigMap {
            metadata: ObjectMeta {
                labels: Some(labels(&[("app", "web"), ("env", "a"), ("has", "")])),
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(sel.matches_object(&cm));
        cm.metadata.labels = None;
        assert!(!sel.matches_object(&cm));
        assert!(Selector::everything().matches_object(&cm));
        assert!(Requirement::new("a", Operator::Equals, ["x", "y"]).is_err());
        assert!(Requirement::new("a", Operator::Exists, ["x"]).is_err());
        assert!(Requirement::new("a", Operator::GreaterThan, ["x"]).is_err());
    }
}
