//! The images a run's code wrote (a chart), shown on its pages: which
//! files are images, the address each is served at, how it is served, and
//! which of them the answer shows, in which order.
//!
//! A file is an image by its name's extension alone (`png`, `jpg`/`jpeg`,
//! `gif`, `webp`, `svg`), never by what its bytes claim: the model's code
//! wrote both. It is read like any artifact, through
//! [`agent::workspace::Workspace`] (no link followed, no `..`).
//!
//! How each is served ([`served_as`]):
//! - a raster image (`png`, `jpeg`, `gif`, `webp`) with its own media type,
//!   and only when its first bytes are that format's signature (a `.png`
//!   holding HTML is served as any other file: `text/plain` or
//!   `application/octet-stream`). Every answer carries
//!   `X-Content-Type-Options: nosniff`, so a browser never reads it as
//!   something else.
//! - an SVG is a document that may carry script, and the model's code
//!   wrote it (attacker input). It is served as `image/svg+xml` so an
//!   `<img>` draws it (scripts never run in an image, and it loads
//!   nothing), with `Content-Security-Policy: sandbox; default-src 'none'`
//!   (inline styles and `data:` images allowed, which charts use) and
//!   `Content-Disposition: attachment`: opened on its own it downloads,
//!   and a browser that rendered it anyway would render it in a unique
//!   origin with scripts off and no loads, never as an active document of
//!   planboard's origin. The pages show it only in `<img>`.
//!
//! A page shows at most [`app::api::IMAGES_SHOWN`] images, each of at most
//! [`IMAGE_SHOWN_MAX_BYTES`]; bigger ones stay in the listing.

use agent::workspace::FileEntry;
use agent::RunId;
use run_model::InputFile;

/// The largest image a page shows (a bigger one is listed, not shown).
pub const IMAGE_SHOWN_MAX_BYTES: u64 = 10 * 1024 * 1024;

/// What an SVG is served with besides its media type (see the module
/// comment); `frame-ancestors` repeats the site's own rule, which this
/// header replaces.
pub const SVG_POLICY: &str =
    "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'";

/// The image formats the pages show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageKind {
    Png,
    Jpeg,
    Gif,
    Webp,
    Svg,
}

impl ImageKind {
    /// The format `path`'s extension names, if it is one the pages show.
    pub fn of(path: &str) -> Option<ImageKind> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let (_, extension) = name.rsplit_once('.')?;
        match extension.to_ascii_lowercase().as_str() {
            "png" => Some(ImageKind::Png),
            "jpg" | "jpeg" => Some(ImageKind::Jpeg),
            "gif" => Some(ImageKind::Gif),
            "webp" => Some(ImageKind::Webp),
            "svg" => Some(ImageKind::Svg),
            _ => None,
        }
    }

    pub fn media_type(self) -> &'static str {
        match self {
            ImageKind::Png => "image/png",
            ImageKind::Jpeg => "image/jpeg",
            ImageKind::Gif => "image/gif",
            ImageKind::Webp => "image/webp",
            ImageKind::Svg => "image/svg+xml",
        }
    }

    /// Whether `bytes` start as this format does (an SVG is text: any).
    fn starts(self, bytes: &[u8]) -> bool {
        match self {
            ImageKind::Png => bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
            ImageKind::Jpeg => bytes.starts_with(&[0xff, 0xd8, 0xff]),
            ImageKind::Gif => bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a"),
            ImageKind::Webp => {
                bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP"
            }
            ImageKind::Svg => true,
        }
    }
}

/// Whether a page shows the file as an image.
pub fn shown_as_image(path: &str, bytes: u64) -> bool {
    ImageKind::of(path).is_some() && bytes <= IMAGE_SHOWN_MAX_BYTES
}

/// Where the file `path` of run `run` is served: each of its components
/// percent-encoded, so any name the workspace takes is one address.
pub fn artifact_url(run: RunId, path: &str) -> String {
    let mut url = format!("/api/runs/{run}/artifacts/");
    for (i, component) in path.split('/').enumerate() {
        if i > 0 {
            url.push('/');
        }
        url.push_str(&percent_encoded(component));
    }
    url
}

/// Every byte but the unreserved ones (RFC 3986) as `%XX`.
fn percent_encoded(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// How an artifact is served: its `Content-Type` and, for an SVG, the
/// policy and the disposition that keep it from being an active page of
/// this origin (see the module comment).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Served {
    pub content_type: &'static str,
    pub policy: Option<&'static str>,
    pub disposition: Option<String>,
}

/// How the file `path`, whose bytes are `bytes`, is served.
pub fn served_as(path: &str, bytes: &[u8]) -> Served {
    match ImageKind::of(path) {
        Some(ImageKind::Svg) => Served {
            content_type: ImageKind::Svg.media_type(),
            policy: Some(SVG_POLICY),
            disposition: Some(format!(
                "attachment; filename*=UTF-8''{}",
                percent_encoded(path.rsplit('/').next().unwrap_or(path))
            )),
        },
        Some(kind) if kind.starts(bytes) => Served {
            content_type: kind.media_type(),
            policy: None,
            disposition: None,
        },
        _ => Served {
            content_type: if std::str::from_utf8(bytes).is_ok() {
                "text/plain; charset=utf-8"
            } else {
                "application/octet-stream"
            },
            policy: None,
            disposition: None,
        },
    }
}

/// Where `name` first stands in `text` as a name of its own (not inside
/// a longer one: `a.png` is not found in `data.png`).
fn mentioned_at(text: &str, name: &str) -> Option<usize> {
    let inside = |c: char| c.is_alphanumeric() || "_-.".contains(c);
    text.match_indices(name).map(|(at, _)| at).find(|&at| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(inside) && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// The images the answer shows, from the workspace's files: those the run
/// wrote (not the files it started with), small enough to show; first
/// those the answer names (by path or file name) in the order it names
/// them, then the rest by path; at most [`app::api::IMAGES_SHOWN`].
pub fn answer_images(answer: &str, files: Vec<FileEntry>, inputs: &[InputFile]) -> Vec<FileEntry> {
    let mut images: Vec<(Option<usize>, FileEntry)> = files
        .into_iter()
        .filter(|f| shown_as_image(&f.path, f.bytes))
        .filter(|f| !inputs.iter().any(|i| i.path == f.path))
        .map(|f| {
            let name = f.path.rsplit('/').next().unwrap_or(&f.path);
            let at = mentioned_at(answer, &f.path).or_else(|| mentioned_at(answer, name));
            (at, f)
        })
        .collect();
    // `None` sorts first: the named ones are put before it by hand.
    images.sort_by(|(a, fa), (b, fb)| match (a, b) {
        (Some(a), Some(b)) => a.cmp(b).then_with(|| fa.path.cmp(&fb.path)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => fa.path.cmp(&fb.path),
    });
    images
        .into_iter()
        .map(|(_, f)| f)
        .take(app::api::IMAGES_SHOWN)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, bytes: u64) -> FileEntry {
        FileEntry {
            path: path.into(),
            bytes,
            modified: None,
        }
    }

    #[test]
    fn images_are_known_by_their_extension_only() {
        assert_eq!(ImageKind::of("out/Chart.PNG"), Some(ImageKind::Png));
        assert_eq!(ImageKind::of("a.jpg"), Some(ImageKind::Jpeg));
        assert_eq!(ImageKind::of("a.svg"), Some(ImageKind::Svg));
        assert_eq!(ImageKind::of("png"), None);
        assert_eq!(ImageKind::of("a.png/notes.txt"), None);
        assert_eq!(ImageKind::of("page.html"), None);
        assert!(shown_as_image("a.webp", IMAGE_SHOWN_MAX_BYTES));
        assert!(!shown_as_image("a.webp", IMAGE_SHOWN_MAX_BYTES + 1));
    }

    #[test]
    fn a_raster_type_is_served_only_for_its_own_signature_and_an_svg_never_as_an_active_page() {
        let png = served_as("chart.png", b"\x89PNG\r\n\x1a\n....");
        assert_eq!(png.content_type, "image/png");
        assert_eq!((png.policy, png.disposition), (None, None));
        assert_eq!(
            served_as("chart.png", b"<script>alert(1)</script>").content_type,
            "text/plain; charset=utf-8"
        );
        assert_eq!(
            served_as("notes.txt", &[0, 159, 146, 150]).content_type,
            "application/octet-stream"
        );
        let svg = served_as("out/tr\"end.svg", b"<svg/>");
        assert_eq!(svg.content_type, "image/svg+xml");
        assert!(svg
            .policy
            .unwrap()
            .starts_with("sandbox; default-src 'none'"));
        assert_eq!(
            svg.disposition.as_deref(),
            Some("attachment; filename*=UTF-8''tr%22end.svg")
        );
    }

    #[test]
    fn addresses_encode_every_component() {
        let run: RunId = uuid::Uuid::nil();
        assert_eq!(
            artifact_url(run, "out/my chart #1.png"),
            format!("/api/runs/{run}/artifacts/out/my%20chart%20%231.png")
        );
        assert_eq!(
            artifact_url(run, "图.png"),
            format!("/api/runs/{run}/artifacts/%E5%9B%BE.png")
        );
    }

    #[test]
    fn the_answer_shows_the_images_it_names_first_then_the_others_written() {
        let files = vec![
            file("a.png", 10),
            file("data.png", 10),
            file("input.png", 10),
            file("notes.txt", 10),
            file("out/trend.svg", 10),
            file("huge.png", IMAGE_SHOWN_MAX_BYTES + 1),
        ];
        let inputs = vec![InputFile {
            path: "input.png".into(),
            bytes: 10,
            preview: None,
        }];
        let shown = |answer: &str| -> Vec<String> {
            answer_images(answer, files.clone(), &inputs)
                .into_iter()
                .map(|f| f.path)
                .collect()
        };
        assert_eq!(
            shown("The trend is in trend.svg; the totals in data.png."),
            ["out/trend.svg", "data.png", "a.png"]
        );
        assert_eq!(
            shown("nothing named"),
            ["a.png", "data.png", "out/trend.svg"]
        );
        let many: Vec<FileEntry> = (0..30).map(|i| file(&format!("c{i:02}.png"), 1)).collect();
        assert_eq!(answer_images("", many, &[]).len(), app::api::IMAGES_SHOWN);
    }
}
