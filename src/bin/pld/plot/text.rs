//! Text on a plot: XML escaping, a width estimate for the bundled font, line wrapping, and
//! the header (title and wrapped subtitle) every plot starts with.

use std::fmt::Write;

/// Average advance of a character of the bundled sans-serif font (DejaVu Sans), in ems. Wide
/// enough for digits and most letters, so that text estimated to fit does fit.
const EM_PER_CHAR: f64 = 0.6;

/// Most subtitle lines; the rest is cut with an ellipsis.
const MAX_SUBTITLE_LINES: usize = 3;

/// Estimated width in pixels of `text` at `font_size` pixels.
pub fn width(text: &str, font_size: f64) -> f64 {
    text.chars().count() as f64 * font_size * EM_PER_CHAR
}

/// Break `text` into lines of at most `max_chars` characters at spaces (a word longer than a
/// line is cut); at most `max_lines` lines, the last ending in "…" when text was left out.
pub fn wrap(text: &str, max_chars: usize, max_lines: usize) -> Vec<String> {
    let max_chars = max_chars.max(8);
    let mut lines: Vec<String> = Vec::new();
    let mut current = String::new();
    for word in text.split_whitespace() {
        let mut word: String = word.to_string();
        loop {
            let needed =
                current.chars().count() + usize::from(!current.is_empty()) + word.chars().count();
            if needed <= max_chars {
                if !current.is_empty() {
                    current.push(' ');
                }
                current.push_str(&word);
                break;
            }
            if current.is_empty() {
                // A word longer than a line: cut it.
                let head: String = word.chars().take(max_chars).collect();
                word = word.chars().skip(max_chars).collect();
                lines.push(head);
                if word.is_empty() {
                    break;
                }
            } else {
                lines.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.is_empty() {
        lines.push(current);
    }
    if lines.len() > max_lines {
        lines.truncate(max_lines);
        if let Some(last) = lines.last_mut() {
            let kept: String = last.chars().take(max_chars.saturating_sub(2)).collect();
            *last = format!("{kept} …");
        }
    }
    lines
}

/// Text for an XML element or attribute.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A standalone SVG document of `width` × `height` on a white background around `body`.
pub fn document(width: f64, height: f64, title: &str, body: &str) -> String {
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\" font-size=\"13\">"
    );
    let _ = writeln!(svg, "<title>{}</title>", escape(title));
    let _ = writeln!(
        svg,
        "<rect width=\"{width}\" height=\"{height}\" fill=\"white\"/>"
    );
    svg.push_str(body);
    svg.push_str("</svg>\n");
    svg
}

/// Write the title (16 px) and the subtitle wrapped to `width` pixels (12 px, at most three
/// lines) at the top of a `width`-pixel canvas; return the height they take.
pub fn header(svg: &mut String, title: &str, subtitle: &str, width: f64) -> f64 {
    let usable = width - 40.0;
    let title_lines = wrap(title, (usable / (16.0 * EM_PER_CHAR)) as usize, 2);
    let subtitle_lines = wrap(
        subtitle,
        (usable / (12.0 * EM_PER_CHAR)) as usize,
        MAX_SUBTITLE_LINES,
    );
    let mut y = 8.0;
    let _ = writeln!(svg, "<g id=\"title\" text-anchor=\"middle\">");
    for line in &title_lines {
        y += 20.0;
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{y:.1}\" font-size=\"16\">{}</text>",
            width / 2.0,
            escape(line)
        );
    }
    for line in &subtitle_lines {
        y += 16.0;
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{y:.1}\" font-size=\"12\" fill=\"#444\">{}</text>",
            width / 2.0,
            escape(line)
        );
    }
    let _ = writeln!(svg, "</g>");
    y + 6.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_at_spaces_and_keeps_every_word() {
        let text = "DP-SGD, noise multiplier 1.1 (σ = 1.1), clipping norm 1, sampling rate \
                    0.004267 (= 256/60000), 14063 steps";
        let lines = wrap(text, 30, 10);
        assert!(lines.iter().all(|l| l.chars().count() <= 30), "{lines:?}");
        assert_eq!(lines.join(" "), text);
    }

    #[test]
    fn wrap_cuts_long_words_and_marks_what_is_left_out() {
        let lines = wrap(&"x".repeat(50), 20, 2);
        assert_eq!(lines.len(), 2);
        assert!(lines[1].ends_with('…'), "{lines:?}");
        assert!(lines.iter().all(|l| l.chars().count() <= 20), "{lines:?}");
        assert!(wrap("", 20, 2).is_empty());
    }
}
