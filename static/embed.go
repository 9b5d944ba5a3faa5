// Package static embeds the designer's CSS, JavaScript and vendored
// libraries (built by `npm run vendor`, committed) so the studio binary
// serves them with no npm and no network.
package static

import "embed"

// FS holds css/, js/ and vendor/.
//
//go:embed css js vendor
var FS embed.FS
