// Reads the comments written above a proto element from its file's source code info (kept by `buf build`, dropped
// from the descriptors protoc-gen-es embeds in gen/).
import type { DescEnum, DescEnumValue, DescField, DescFile, DescMessage, DescMethod, DescService } from "@bufbuild/protobuf";
import {
  DescriptorProtoSchema,
  EnumDescriptorProtoSchema,
  FileDescriptorProtoSchema,
  ServiceDescriptorProtoSchema,
} from "@bufbuild/protobuf/wkt";

export type CommentedDesc = DescMessage | DescField | DescEnum | DescEnumValue | DescService | DescMethod;

/** The element's path in its file's descriptor, as source code info locations name it. */
function sourcePath(desc: CommentedDesc): number[] {
  switch (desc.kind) {
    case "message":
      return desc.parent
        ? [...sourcePath(desc.parent), DescriptorProtoSchema.field.nestedType.number, desc.parent.proto.nestedType.indexOf(desc.proto)]
        : [FileDescriptorProtoSchema.field.messageType.number, desc.file.proto.messageType.indexOf(desc.proto)];
    case "field":
      return [...sourcePath(desc.parent), DescriptorProtoSchema.field.field.number, desc.parent.proto.field.indexOf(desc.proto)];
    case "enum":
      return desc.parent
        ? [...sourcePath(desc.parent), DescriptorProtoSchema.field.enumType.number, desc.parent.proto.enumType.indexOf(desc.proto)]
        : [FileDescriptorProtoSchema.field.enumType.number, desc.file.proto.enumType.indexOf(desc.proto)];
    case "enum_value":
      return [...sourcePath(desc.parent), EnumDescriptorProtoSchema.field.value.number, desc.parent.proto.value.indexOf(desc.proto)];
    case "service":
      return [FileDescriptorProtoSchema.field.service.number, desc.file.proto.service.indexOf(desc.proto)];
    case "rpc":
      return [...sourcePath(desc.parent), ServiceDescriptorProtoSchema.field.method.number, desc.parent.proto.method.indexOf(desc.proto)];
  }
}

function fileOf(desc: CommentedDesc): DescFile {
  switch (desc.kind) {
    case "field":
      return desc.parent.file;
    case "enum_value":
      return desc.parent.file;
    case "rpc":
      return desc.parent.file;
    default:
      return desc.file;
  }
}

/** `// Text` lines come back as ` Text`: drop the one space after the slashes, keep deeper indentation. */
function clean(comment: string): string {
  return comment
    .split("\n")
    .map((line) => (line.startsWith(" ") ? line.slice(1) : line).trimEnd())
    .join("\n")
    .trim();
}

/**
 * The element's leading comment (else its trailing one), cleaned, or undefined when there is none — always so for
 * descriptors without source code info, such as the ones embedded in gen/.
 */
export function protoComment(desc: CommentedDesc): string | undefined {
  const path = sourcePath(desc);
  const location = fileOf(desc).proto.sourceCodeInfo?.location.find(
    (l) => l.path.length === path.length && l.path.every((n, i) => n === path[i]),
  );
  const text = clean(location?.leadingComments || location?.trailingComments || "");
  return text === "" ? undefined : text;
}
