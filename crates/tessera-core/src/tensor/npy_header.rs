//! The header of a `.npy` file: a Python dict literal such as
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`, read and written here.
//!
//! Only what numpy writes for a plain array is read (a dtype string, a bool, a tuple of
//! integers): a one-pass parser, linear in the header's length. A general Python-literal parser
//! (py_literal, through ndarray-npy) did the same with 0.14 MB of an edge binary's code and
//! backtracked exponentially on nested brackets.

/// The fields of a `.npy` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyHeader {
    /// numpy's type string, e.g. `<f4`.
    pub descr: String,
    /// Column-major element order.
    pub fortran_order: bool,
    pub shape: Vec<usize>,
}

impl NpyHeader {
    /// Parses the dict literal of a header (the text after the length field, padding included).
    pub fn parse(text: &[u8]) -> Result<NpyHeader, String> {
        let mut cursor = Cursor { text, at: 0 };
        let (mut descr, mut fortran_order, mut shape) = (None, None, None);
        cursor.expect(b'{')?;
        loop {
            if cursor.eat(b'}') {
                break;
            }
            let key = cursor.string()?;
            cursor.expect(b':')?;
            match key.as_str() {
                "descr" => descr = Some(cursor.descr()?),
                "fortran_order" => fortran_order = Some(cursor.boolean()?),
                "shape" => shape = Some(cursor.tuple_of_sizes()?),
                other => return Err(format!("unexpected key '{other}'")),
            }
            if !cursor.eat(b',') {
                cursor.expect(b'}')?;
                break;
            }
        }
        if cursor.text[cursor.at..]
            .iter()
            .any(|b| !b.is_ascii_whitespace())
        {
            return Err(format!("text after the dict at byte {}", cursor.at));
        }
        let missing = |key| format!("no '{key}' key");
        Ok(NpyHeader {
            descr: descr.ok_or_else(|| missing("descr"))?,
            fortran_order: fortran_order.ok_or_else(|| missing("fortran_order"))?,
            shape: shape.ok_or_else(|| missing("shape"))?,
        })
    }

    /// The dict literal as numpy writes it, padded with spaces and ended by a newline so that
    /// the data starts at a multiple of 64 bytes from the file's start (`prefix_len` bytes of
    /// magic string, version and length field come before it).
    pub fn to_text(&self, prefix_len: usize) -> String {
        let shape = match self.shape.as_slice() {
            [one] => format!("({one},)"),
            dims => format!(
                "({})",
                dims.iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let fortran = if self.fortran_order { "True" } else { "False" };
        let mut text = format!(
            "{{'descr': '{}', 'fortran_order': {fortran}, 'shape': {shape}, }}",
            self.descr
        );
        let unpadded = prefix_len + text.len() + 1;
        text.extend(std::iter::repeat_n(
            ' ',
            unpadded.next_multiple_of(64) - unpadded,
        ));
        text.push('\n');
        text
    }
}

struct Cursor<'a> {
    text: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    /// The next byte that is not white space, not consumed.
    fn peek(&mut self) -> Option<u8> {
        while self.text.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
        self.text.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        if found {
            self.at += 1;
        }
        found
    }

    fn expect(&mut self, byte: u8) -> Result<(), String> {
        if self.eat(byte) {
            return Ok(());
        }
        Err(match self.peek() {
            Some(found) => format!(
                "expected '{}' at byte {}, found '{}'",
                byte as char,
                self.at,
                found.escape_ascii()
            ),
            None => format!(
                "expected '{}' at byte {}, found the end",
                byte as char, self.at
            ),
        })
    }

    /// A quoted string without escapes (numpy's keys and type strings have none).
    fn string(&mut self) -> Result<String, String> {
        let quote = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => return Err(format!("expected a quoted string at byte {}", self.at)),
        };
        let start = self.at + 1;
        let len = self.text[start..]
            .iter()
            .position(|&b| b == quote)
            .ok_or_else(|| format!("unterminated string at byte {}", self.at))?;
        let body = &self.text[start..start + len];
        if body.contains(&b'\\') {
            return Err(format!("escape in a string at byte {}", self.at));
        }
        self.at = start + len + 1;
        String::from_utf8(body.to_vec()).map_err(|_| "a string that is not UTF-8".to_string())
    }

    /// `descr`: a type string; a list there is a structured dtype.
    fn descr(&mut self) -> Result<String, String> {
        if self.peek() == Some(b'[') {
            return Err("structured dtypes (a list as 'descr') are not supported".to_string());
        }
        self.string()
    }

    fn boolean(&mut self) -> Result<bool, String> {
        self.peek();
        for (word, value) in [(&b"True"[..], true), (&b"False"[..], false)] {
            if self.text[self.at..].starts_with(word) {
                self.at += word.len();
                return Ok(value);
            }
        }
        Err(format!("expected True or False at byte {}", self.at))
    }

    /// `(2, 3)`, `(5,)` or `()`; Python 2's long suffix (`2L`) accepted, as numpy does.
    fn tuple_of_sizes(&mut self) -> Result<Vec<usize>, String> {
        self.expect(b'(')?;
        let mut sizes = Vec::new();
        loop {
            if self.eat(b')') {
                return Ok(sizes);
            }
            let start = self.at;
            let digits = self.text[start..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            if digits == 0 {
                return Err(format!("expected a dimension at byte {start}"));
            }
            let size = std::str::from_utf8(&self.text[start..start + digits])
                .ok()
                .and_then(|digits| digits.parse::<usize>().ok())
                .ok_or_else(|| format!("dimension at byte {start} does not fit in 64 bits"))?;
            self.at += digits;
            self.eat(b'L');
            sizes.push(size);
            if !self.eat(b',') {
                self.expect(b')')?;
                return Ok(sizes);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_numpy_writes() {
        for (text, shape) in [
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }      \n",
                vec![2, 3],
            ),
            (
                "{'descr': '|u1', 'fortran_order': False, 'shape': (7,), }",
                vec![7],
            ),
            (
                "{'descr': '<i8', 'fortran_order': False, 'shape': (), }",
                vec![],
            ),
            // Python 2 numpy, double quotes, no trailing comma, another key order.
            (
                "{\"shape\": (2L, 0L), \"fortran_order\": False, \"descr\": \"<f8\"}",
                vec![2, 0],
            ),
        ] {
            let header = NpyHeader::parse(text.as_bytes()).unwrap();
            assert_eq!(header.shape, shape, "{text}");
            assert!(!header.fortran_order);
        }
    }

    #[test]
    fn round_trips_and_pads_to_64() {
        for shape in [vec![], vec![5], vec![1, 3, 48, 192]] {
            let header = NpyHeader {
                descr: "<f4".into(),
                fortran_order: true,
                shape,
            };
            let text = header.to_text(10);
            assert_eq!((10 + text.len()) % 64, 0);
            assert!(text.ends_with('\n'));
            assert_eq!(NpyHeader::parse(text.as_bytes()).unwrap(), header);
        }
    }

    #[test]
    fn malformed_headers_are_errors() {
        for text in [
            "",
            "{",
            "{'descr': '<f4', 'fortran_order': False}",
            "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,)}",
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1, -2)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} trailing",
            "{'descr': '<f4\\'', 'fortran_order': False, 'shape': (1,)}",
            "{'descr: '<f4', 'fortran_order': False, 'shape': (1,)}",
        ] {
            assert!(NpyHeader::parse(text.as_bytes()).is_err(), "{text}");
        }
    }
}
