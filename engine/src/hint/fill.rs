//! Placeholder filling for the hint templates.

/// Replaces `{key}` placeholders in one pass, so text from the plan that
/// happens to contain braces is never expanded.
pub(super) fn fill(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + 64);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let replaced = after.find('}').and_then(|close| {
            let key = &after[..close];
            vars.iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| (close, *v))
        });
        match replaced {
            Some((close, value)) => {
                out.push_str(value);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_never_expands_placeholders_that_arrive_inside_values() {
        let out = fill("a {x} b {y}", &[("x", "{y}"), ("y", "2")]);
        assert_eq!(out, "a {y} b 2");
    }

    #[test]
    fn fill_leaves_unknown_placeholders_alone() {
        assert_eq!(fill("{nope} {x}", &[("x", "1")]), "{nope} 1");
    }
}
