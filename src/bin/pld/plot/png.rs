//! PNG from the SVG the plots write: rasterized by resvg at twice the SVG's size, with text
//! in the bundled DejaVu Sans (`assets/fonts`, Bitstream Vera licence beside it) and no
//! system font, so the pixels do not depend on the machine.

use std::sync::{Arc, OnceLock};

/// The one font every plot uses.
static FONT: &[u8] = include_bytes!("../../../../assets/fonts/DejaVuSans.ttf");

/// The bundled font's family name.
const FAMILY: &str = "DejaVu Sans";

/// Pixels per SVG unit.
pub const SCALE: u32 = 2;

/// The font database, built once.
fn fonts() -> Arc<resvg::usvg::fontdb::Database> {
    static FONTS: OnceLock<Arc<resvg::usvg::fontdb::Database>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            let mut db = resvg::usvg::fontdb::Database::new();
            db.load_font_data(FONT.to_vec());
            db.set_sans_serif_family(FAMILY);
            db.set_serif_family(FAMILY);
            db.set_monospace_family(FAMILY);
            Arc::new(db)
        })
        .clone()
}

/// The SVG `svg` as PNG bytes, `SCALE` pixels per SVG unit.
///
/// # Errors
/// A message when the SVG does not parse or is too large to rasterize (neither happens for
/// the SVG this program writes).
pub fn rasterize(svg: &str) -> Result<Vec<u8>, String> {
    let options = resvg::usvg::Options {
        font_family: FAMILY.into(),
        fontdb: fonts(),
        ..Default::default()
    };
    let tree = resvg::usvg::Tree::from_str(svg, &options).map_err(|e| e.to_string())?;
    let size = tree.size().to_int_size();
    let (width, height) = (size.width() * SCALE, size.height() * SCALE);
    let mut pixmap = resvg::tiny_skia::Pixmap::new(width, height)
        .ok_or_else(|| format!("cannot allocate a {width} × {height} image"))?;
    let scale = SCALE as f32;
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_drawn_with_the_bundled_font() {
        let with_text = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"60\" height=\"20\" \
                         font-family=\"sans-serif\"><rect width=\"60\" height=\"20\" \
                         fill=\"white\"/><text x=\"2\" y=\"15\" font-size=\"14\">ε δ</text></svg>";
        let without = with_text.replace("ε δ", "");
        let a = rasterize(with_text).expect("renders");
        let b = rasterize(&without).expect("renders");
        assert_ne!(a, b, "the text left no pixel");
        assert_eq!(
            a,
            rasterize(with_text).expect("renders"),
            "not deterministic"
        );
    }

    #[test]
    fn invalid_svg_is_an_error_not_a_panic() {
        assert!(rasterize("<svg").is_err());
        assert!(rasterize("").is_err());
    }
}
