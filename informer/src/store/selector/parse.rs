//! The API server's string grammar for label selectors: a lexer and a recursive-descent
//! parser.
//!
//! [`Selector::parse`] and [`FromStr`](std::str::FromStr) run the `Parser` here. It
//! follows apimachinery's `labels.Parse`, including its handling of empty values and of
//! `in`/`notin` (keywords only where an operator is expected), and reports the byte
//! offset of the first token it cannot use. Keys and values are validated where every
//! requirement is built, in [`Requirement::new`].

use std::fmt;

use super::error::SelectorError;
use super::operator::Operator;
use super::requirement::Requirement;

// The grammar:
//
//   selector    ::= requirement ("," requirement)*  |  ""
//   requirement ::= "!" KEY | KEY [ op VALUE | ("in"|"notin") "(" values ")" ]
//   op          ::= "=" | "==" | "!=" | ">" | "<"
//   values      ::= VALUE? ("," VALUE?)*
//
// `in` and `notin` are keywords only where an operator is expected.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok<'a> {
    Ident(&'a str),
    Bang,
    Eq,
    DoubleEq,
    NotEq,
    Gt,
    Lt,
    Open,
    Close,
    Comma,
    End,
}

impl fmt::Display for Tok<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Ident(s) => write!(f, "{s:?}"),
            Tok::Bang => f.write_str("'!'"),
            Tok::Eq => f.write_str("'='"),
            Tok::DoubleEq => f.write_str("'=='"),
            Tok::NotEq => f.write_str("'!='"),
            Tok::Gt => f.write_str("'>'"),
            Tok::Lt => f.write_str("'<'"),
            Tok::Open => f.write_str("'('"),
            Tok::Close => f.write_str("')'"),
            Tok::Comma => f.write_str("','"),
            Tok::End => f.write_str("end of string"),
        }
    }
}

fn is_special(c: u8) -> bool {
    matches!(c, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn lex(input: &str) -> Vec<(Tok<'_>, usize)> {
    let b = input.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let tok = if is_special(c) {
            let next = b.get(i + 1).copied();
            let (tok, len) = match (c, next) {
                (b'!', Some(b'=')) => (Tok::NotEq, 2),
                (b'=', Some(b'=')) => (Tok::DoubleEq, 2),
                (b'!', _) => (Tok::Bang, 1),
                (b'=', _) => (Tok::Eq, 1),
                (b'(', _) => (Tok::Open, 1),
                (b')', _) => (Tok::Close, 1),
                (b',', _) => (Tok::Comma, 1),
                (b'>', _) => (Tok::Gt, 1),
                _ => (Tok::Lt, 1),
            };
            i += len;
            tok
        } else {
            while i < b.len() && !is_special(b[i]) && !b[i].is_ascii_whitespace() {
                i += 1;
            }
            Tok::Ident(&input[start..i])
        };
        out.push((tok, start));
    }
    out.push((Tok::End, input.len()));
    out
}

/// Parses one selector string; see the module docs.
pub(super) struct Parser<'a> {
    tokens: Vec<(Tok<'a>, usize)>,
    pos: usize,
}

impl<'a> Parser<'a> {
    pub(super) fn new(input: &'a str) -> Self {
        Self {
            tokens: lex(input),
            pos: 0,
        }
    }

    fn peek(&self) -> Tok<'a> {
        self.tokens[self.pos].0
    }

    fn next(&mut self) -> Tok<'a> {
        let tok = self.peek();
        if tok != Tok::End {
            self.pos += 1;
        }
        tok
    }

    fn error(&self, message: impl Into<String>) -> SelectorError {
        SelectorError::Syntax {
            position: self.tokens[self.pos.min(self.tokens.len() - 1)].1,
            message: message.into(),
        }
    }

    /// An error about the token just consumed.
    fn error_prev(&mut self, message: impl Into<String>) -> SelectorError {
        self.pos = self.pos.saturating_sub(1);
        self.error(message)
    }

    /// The requirements in the order written (none for an empty string: the selector
    /// of everything).
    pub(super) fn parse(mut self) -> Result<Vec<Requirement>, SelectorError> {
        let mut requirements = Vec::new();
        if self.peek() == Tok::End {
            return Ok(requirements);
        }
        loop {
            requirements.push(self.requirement()?);
            match self.next() {
                Tok::End => break,
                Tok::Comma => {}
                other => {
                    return Err(
                        self.error_prev(format!("found {other}, expected ',' or end of string"))
                    );
                }
            }
        }
        Ok(requirements)
    }

    fn requirement(&mut self) -> Result<Requirement, SelectorError> {
        let negated = self.peek() == Tok::Bang;
        if negated {
            self.next();
        }
        let key = match self.next() {
            Tok::Ident(key) => key,
            other => return Err(self.error_prev(format!("found {other}, expected a label key"))),
        };
        if matches!(self.peek(), Tok::Comma | Tok::End) {
            let op = if negated {
                Operator::DoesNotExist
            } else {
                Operator::Exists
            };
            return Requirement::new(key, op, [] as [String; 0]);
        }
        if negated {
            return Err(self.error(format!("'!{key}' takes no operator")));
        }
        let operator = match self.next() {
            Tok::Eq | Tok::DoubleEq => Operator::Equals,
            Tok::NotEq => Operator::NotEquals,
            Tok::Gt => Operator::GreaterThan,
            Tok::Lt => Operator::LessThan,
            Tok::Ident("in") => Operator::In,
            Tok::Ident("notin") => Operator::NotIn,
            other => {
                return Err(self.error_prev(format!(
                    "found {other}, expected one of =, ==, !=, >, <, in, notin"
                )));
            }
        };
        let values = match operator {
            Operator::In | Operator::NotIn => self.value_set()?,
            _ => vec![self.exact_value()?],
        };
        Requirement::new(key, operator, values)
    }

    fn exact_value(&mut self) -> Result<&'a str, SelectorError> {
        match self.peek() {
            Tok::Comma | Tok::End => Ok(""),
            Tok::Ident(value) => {
                self.next();
                Ok(value)
            }
            other => Err(self.error(format!("found {other}, expected a value"))),
        }
    }

    fn value_set(&mut self) -> Result<Vec<&'a str>, SelectorError> {
        match self.next() {
            Tok::Open => {}
            other => return Err(self.error_prev(format!("found {other}, expected '('"))),
        }
        let mut values = Vec::new();
        let mut current: Option<&'a str> = None;
        loop {
            match self.next() {
                Tok::Ident(value) if current.is_none() => current = Some(value),
                Tok::Comma => values.push(current.take().unwrap_or("")),
                Tok::Close => {
                    values.push(current.take().unwrap_or(""));
                    return Ok(values);
                }
                other => {
                    return Err(
                        self.error_prev(format!("found {other}, expected ',', ')' or a value"))
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Selector;
    use crate::store::selector::tests::labels;

    #[test]
    fn parses_every_operator_of_the_grammar() {
        let sel = Selector::parse("app=web,tier!=db,env in (a,b),!legacy,has").unwrap();
        let ops: Vec<_> = sel
            .requirements()
            .iter()
            .map(|r| (r.key(), r.operator()))
            .collect();
        assert_eq!(
            ops,
            [
                ("app", Operator::Equals),
                ("env", Operator::In),
                ("has", Operator::Exists),
                ("legacy", Operator::DoesNotExist),
                ("tier", Operator::NotEquals),
            ]
        );
        let sel = Selector::parse(" a == b , c notin ( x , y ) , n>3, m<10 ").unwrap();
        assert_eq!(sel.to_string(), "a=b,c notin (x,y),m<10,n>3");
        assert_eq!(Selector::parse("").unwrap(), Selector::everything());
        assert_eq!(Selector::parse("   ").unwrap(), Selector::everything());
    }

    #[test]
    fn empty_values_follow_apimachinery() {
        let eq_empty = Selector::parse("a=,b").unwrap();
        assert_eq!(eq_empty.requirements()[0].values(), [""]);
        assert!(eq_empty.matches(&labels(&[("a", ""), ("b", "x")])));
        assert_eq!(
            Selector::parse("x in ()").unwrap().requirements()[0].values(),
            [""]
        );
        assert_eq!(
            Selector::parse("x in (foo,,baz)").unwrap().requirements()[0].values(),
            ["", "baz", "foo"]
        );
        assert_eq!(
            Selector::parse("x in (a,)").unwrap().requirements()[0].values(),
            ["", "a"]
        );
        // `in` is a keyword only where an operator is expected.
        assert_eq!(
            Selector::parse("x in (in,notin)").unwrap().requirements()[0].values(),
            ["in", "notin"]
        );
    }

    #[test]
    fn rejects_malformed_selectors() {
        for bad in [
            "a=b=c",
            "a in b",
            "a in (b",
            "a in (b c)",
            ",a",
            "a,",
            "a,,b",
            "!a=b",
            "=b",
            "a b",
            "a>b",
            "a!",
            "(a)",
            "-a=b",
            "a=-b",
            "Foo.com/a=b",
            "a/b/c=d",
            "x in (a)(b)",
        ] {
            assert!(Selector::parse(bad).is_err(), "{bad:?} should not parse");
        }
        let long = "a".repeat(64);
        assert!(matches!(
            Selector::parse(&format!("{long}=x")),
            Err(SelectorError::InvalidKey { .. })
        ));
        assert!(matches!(
            Selector::parse(&format!("x={long}")),
            Err(SelectorError::InvalidValue { .. })
        ));
        assert!(Selector::parse("example.com/app=web,k8s.io/x_y.z=A-1").is_ok());
    }
}
