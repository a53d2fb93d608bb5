//! Keeps the user guide honest: every English page has a Chinese page with the same structure
//! (the same headings, level by level, and the same code blocks), every collective macro and every
//! public error variant is mentioned in both languages, and the README links the guide. (The code
//! blocks marked `rust` are compiled and run as doctests of the `pld` crate.)

use std::path::{Path, PathBuf};

const PAGES: [&str; 5] = ["model", "collectives", "primitives", "running", "debugging"];

fn guide() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guide")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Headings (level and, for comparison across languages, the code spans in them) and code
/// blocks, outside and inside fences respectively.
fn structure(text: &str) -> (Vec<(usize, Vec<String>)>, Vec<String>) {
    let (mut headings, mut blocks) = (Vec::new(), Vec::new());
    let mut fence: Option<String> = None;
    for line in text.lines() {
        if line.starts_with("```") {
            match fence.take() {
                Some(block) => blocks.push(block),
                None => fence = Some(format!("{line}\n")),
            }
            continue;
        }
        if let Some(block) = &mut fence {
            block.push_str(line);
            block.push('\n');
        } else if line.starts_with('#') {
            let level = line.chars().take_while(|&c| c == '#').count();
            let spans = line.split('`').skip(1).step_by(2).map(str::to_owned).collect();
            let ascii_words: Vec<String> = line
                .split(|c: char| !c.is_ascii_alphanumeric() && c != '_' && c != '!')
                .filter(|w| w.contains('!'))
                .map(str::to_owned)
                .collect();
            headings.push((level, [spans, ascii_words].concat()));
        }
    }
    (headings, blocks)
}

#[test]
fn both_languages_have_the_same_pages_headings_and_code() {
    for page in PAGES {
        let en = read(&guide().join(format!("{page}.md")));
        let zh = read(&guide().join(format!("zh/{page}.md")));
        let (en_headings, en_blocks) = structure(&en);
        let (zh_headings, zh_blocks) = structure(&zh);
        assert_eq!(
            en_headings.iter().map(|h| h.0).collect::<Vec<_>>(),
            zh_headings.iter().map(|h| h.0).collect::<Vec<_>>(),
            "{page}: the English and Chinese pages have different headings"
        );
        for (e, z) in en_headings.iter().zip(&zh_headings) {
            assert_eq!(e.1, z.1, "{page}: heading `{:?}` has no counterpart in Chinese", e.1);
        }
        assert_eq!(en_blocks, zh_blocks, "{page}: the code blocks differ between the languages");
    }
}

fn all_pages(language: &str) -> String {
    PAGES.iter().map(|p| read(&guide().join(format!("{language}{p}.md")))).collect::<Vec<_>>().join("\n")
}

#[test]
fn every_collective_and_every_error_is_in_both_languages() {
    let macros = pld::Collective::ALL.map(|c| format!("{}!", c.name()));
    let source = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("pld-core/src/error.rs"));
    let body = &source[source.find("pub enum Error").expect("the Error enum")..];
    let body = &body[..body.find("\n}\n").expect("its end")];
    let variants: Vec<String> = body
        .lines()
        .filter_map(|l| l.strip_prefix("    "))
        .filter(|l| l.starts_with(|c: char| c.is_ascii_uppercase()))
        .map(|l| l.split(|c: char| !c.is_ascii_alphanumeric()).next().unwrap_or_default().to_owned())
        .collect();
    assert!(variants.len() >= 15, "found only {variants:?}");
    for (language, text) in [("English", all_pages("")), ("Chinese", all_pages("zh/"))] {
        for name in macros.iter().chain(&variants) {
            assert!(
                text.contains(&format!("`{name}`")) || text.contains(name.as_str()),
                "{language} guide never mentions `{name}`"
            );
        }
    }
}

#[test]
fn the_readme_links_the_guide() {
    let readme = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"));
    for page in PAGES {
        assert!(readme.contains(&format!("docs/guide/{page}.md")), "README does not link {page}.md");
        assert!(readme.contains(&format!("docs/guide/zh/{page}.md")), "README does not link zh/{page}.md");
    }
}
