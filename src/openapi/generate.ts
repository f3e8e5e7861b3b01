// Build step: `node dist/src/openapi/generate.js <image.binpb> <out.json>` writes the OpenAPI document from a
// descriptor image that `buf build -o` made with source info, so that proto comments become descriptions.
import { writeDocumentFromImage } from "./document-source.js";

const [imagePath, outPath] = process.argv.slice(2);
if (imagePath === undefined || outPath === undefined) {
  process.stderr.write("usage: generate.js <image.binpb> <out.json>\n");
  process.exit(2);
}
writeDocumentFromImage(imagePath, outPath);
process.stdout.write(`wrote ${outPath}\n`);
