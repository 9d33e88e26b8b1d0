//! Cutting messages to a size limit (Kubernetes Event notes, quoted server answers) without
//! splitting a UTF-8 character, and saying that something was cut; listing the first few of many.

/// Kubernetes caps an Event's note at 1 KiB.
pub const EVENT_NOTE_MAX: usize = 1024;

/// What replaces the cut end.
pub const CUT_MARK: &str = " … (truncated)";

/// `s` unchanged when it fits in `max` bytes; otherwise its start, cut at a character boundary,
/// followed by [`CUT_MARK`], `max` bytes at most in all (when `max` cannot even hold the mark,
/// just the start).
pub fn truncate(mut s: String, max: usize) -> String {
    if s.len() <= max {
        return s;
    }
    let (keep, mark) = match max.checked_sub(CUT_MARK.len()) {
        Some(keep) => (keep, CUT_MARK),
        None => (max, ""),
    };
    let cut = (0..=keep).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0);
    s.truncate(cut);
    s.push_str(mark);
    s
}

/// The first `shown` items joined with "; ", then " and N more" when there are more.
pub fn listed(items: &[String], shown: usize) -> String {
    let mut out = items.iter().take(shown).cloned().collect::<Vec<_>>().join("; ");
    if items.len() > shown {
        out.push_str(&format!(" and {} more", items.len() - shown));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_shows_the_first_items_and_counts_the_rest() {
        let items: Vec<String> = (1..=12).map(|i| format!("n{i}")).collect();
        assert_eq!(listed(&items[..2], 10), "n1; n2");
        assert_eq!(listed(&items[..10], 10), "n1; n2; n3; n4; n5; n6; n7; n8; n9; n10");
        assert_eq!(listed(&items, 10), "n1; n2; n3; n4; n5; n6; n7; n8; n9; n10 and 2 more");
        assert_eq!(listed(&[], 10), "");
    }

    #[test]
    fn short_enough_is_unchanged() {
        assert_eq!(truncate(String::new(), 0), "");
        assert_eq!(truncate("abc".into(), 3), "abc");
        assert_eq!(truncate("ünïcödé".into(), 100), "ünïcödé");
    }

    #[test]
    fn too_long_keeps_the_start_and_says_so() {
        let s = "x".repeat(2000);
        let t = truncate(s, EVENT_NOTE_MAX);
        assert_eq!(t.len(), EVENT_NOTE_MAX);
        assert_eq!(t, format!("{}{CUT_MARK}", "x".repeat(EVENT_NOTE_MAX - CUT_MARK.len())));
    }

    /// Every limit across 1-, 2-, 3- and 4-byte characters: valid UTF-8 (a `String`), within
    /// the limit, a prefix of the original at a character boundary, the mark iff cut.
    #[test]
    fn never_splits_a_character_whatever_the_limit() {
        let s = "aé…😀b".repeat(8) + "€";
        for max in 0..=s.len() + 2 {
            let t = truncate(s.clone(), max);
            assert!(t.len() <= max, "limit {max}: {} bytes: {t:?}", t.len());
            if s.len() <= max {
                assert_eq!(t, s);
                continue;
            }
            let kept = t.strip_suffix(CUT_MARK).unwrap_or(&t);
            assert!(s.starts_with(kept), "limit {max}: {kept:?} is not a start of the message");
            assert_eq!(t.ends_with(CUT_MARK), max >= CUT_MARK.len(), "limit {max}: {t:?}");
            // As much as fits: the next character would not have.
            let room = if max >= CUT_MARK.len() { max - CUT_MARK.len() } else { max };
            let next = s[kept.len()..].chars().next().map_or(0, char::len_utf8);
            assert!(kept.len() + next > room, "limit {max}: cut too early at {}", kept.len());
        }
    }
}
