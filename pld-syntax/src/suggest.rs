//! "Did you mean": the closest known word to a misspelled keyword or value.

/// The candidate closest to `word` by edit distance, if it is close enough to be a likely typo
/// (at most a third of the word's length, and at least one edit allowed).
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (edit_distance(word, c), c))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// `unknown {what} `{word}`` plus a suggestion or the list of what is accepted.
pub(crate) fn unknown(what: &str, word: &str, candidates: &[&str]) -> String {
    match did_you_mean(word, candidates.iter().copied()) {
        Some(best) => format!("unknown {what} `{word}`; did you mean `{best}`?"),
        None if candidates.is_empty() => format!("unknown {what} `{word}`: none is accepted here"),
        None => format!("unknown {what} `{word}`; expected one of {}", list(candidates)),
    }
}

/// Rust's primitive types that are not pld element types. Each is a word of its own, never a
/// typo of a near element type (`u16` is not a misspelt `f16`), so no suggestion is made.
const OTHER_PRIMITIVES: [&str; 11] =
    ["i16", "u16", "i128", "u128", "isize", "usize", "bool", "char", "str", "f128", "f8"];

/// The message for a type that is not a pld element type, listing the element types.
pub(crate) fn unknown_element(word: &str) -> String {
    let elements = pld_model::DType::ALL.map(pld_model::DType::name);
    if OTHER_PRIMITIVES.contains(&word) {
        format!("`{word}` is not a pld element type; expected one of {}", list(&elements))
    } else {
        unknown("element type", word, &elements)
    }
}

/// Whether `word` is a Rust primitive type that pld has no element type for.
pub(crate) fn is_other_primitive(word: &str) -> bool {
    OTHER_PRIMITIVES.contains(&word)
}

/// `` `a`, `b` or `c` ``.
pub(crate) fn list(words: &[&str]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| format!("`{w}`")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// Edit distance over chars where a swap of two neighbours counts as one edit (optimal string
/// alignment), since `mdoe` for `mode` is the commonest typo.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j - 1] + cost).min(d[i - 1][j] + 1).min(d[i][j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use pld_model::Collective;

    #[test]
    fn suggests_contract_keywords() {
        let keywords = Collective::AllReduce.contract().keywords.iter().copied();
        assert_eq!(did_you_mean("mdoe", keywords.clone()), Some("mode"));
        assert_eq!(did_you_mean("signl", keywords.clone()), Some("signal"));
        assert_eq!(did_you_mean("banana", keywords), None);
        assert_eq!(list(&["a", "b", "c"]), "`a`, `b` or `c`");
        assert!(!unknown_element("u16").contains("did you mean"), "u16 is a type of its own, not a typo of f16");
        assert!(unknown_element("f23").contains("did you mean `f32`"));
    }
}
