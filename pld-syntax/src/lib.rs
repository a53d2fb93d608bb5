//! The one front end of pld, shared by the procedural macros and the build-script backend.
//!
//! It grows with the host DSL; today it holds what both sides need to report a misspelled
//! keyword or value the same way: the closest known word.

/// The candidate closest to `word` by edit distance, if it is close enough to be a likely typo
/// (at most a third of the word's length, and at least one edit allowed).
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (edit_distance(word, c), c))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut row = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            row[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(row[j] + 1);
        }
        prev = row;
    }
    prev[b.len()]
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
    }
}
