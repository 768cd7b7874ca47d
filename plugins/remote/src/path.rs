//! Names in a remote's URLs.

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// Everything but RFC 3986's unreserved characters.
const NOT_UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// One path segment or query value, percent-encoded: a namespace level, a table's name
/// or an ARN (which holds `:` and `/`) stays one segment.
pub fn segment(text: &str) -> String {
    utf8_percent_encode(text, NOT_UNRESERVED).to_string()
}

#[cfg(test)]
mod tests {
    use super::segment;

    #[test]
    fn only_unreserved_characters_stay() {
        assert_eq!(segment("a-b.c_d~e"), "a-b.c_d~e");
        assert_eq!(
            segment("arn:aws:s3tables:us-east-1:1:bucket/b"),
            "arn%3Aaws%3As3tables%3Aus-east-1%3A1%3Abucket%2Fb"
        );
        assert_eq!(segment("a b\u{1f}é"), "a%20b%1F%C3%A9");
    }
}
