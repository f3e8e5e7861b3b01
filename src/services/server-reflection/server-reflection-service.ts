// gRPC server reflection (v1) answered from the generated file descriptors, so buf curl and grpcurl can list and
// call Engram's methods without local protos.
import { create, toBinary, type DescFile, type DescService } from "@bufbuild/protobuf";
import { nestedTypes } from "@bufbuild/protobuf/reflect";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import {
  ErrorResponseSchema,
  ExtensionNumberResponseSchema,
  FileDescriptorResponseSchema,
  ListServiceResponseSchema,
  ServerReflection,
  ServiceResponseSchema,
  type ServerReflectionRequest,
  type ServerReflectionResponse,
} from "../../../gen/grpc/reflection/v1/reflection_pb.js";

type Answer = ServerReflectionResponse["messageResponse"];

/** A file and everything it imports, dependencies first, each once. */
function withDependencies(file: DescFile, seen = new Set<string>()): DescFile[] {
  if (seen.has(file.name)) return [];
  seen.add(file.name);
  return [...file.dependencies.flatMap((dep) => withDependencies(dep, seen)), file];
}

export function serverReflectionService(services: readonly DescService[]): Partial<ServiceImpl<typeof ServerReflection>> {
  const served = [...services, ServerReflection];
  const files = new Map<string, DescFile>();
  const fileOfSymbol = new Map<string, DescFile>();
  for (const file of served.flatMap((s) => withDependencies(s.file))) {
    files.set(file.name + ".proto", file);
    for (const type of nestedTypes(file)) {
      fileOfSymbol.set(type.typeName, file);
      if (type.kind === "service") for (const m of type.methods) fileOfSymbol.set(`${type.typeName}.${m.name}`, file);
    }
  }
  const error = (errorCode: Code, errorMessage: string): Answer => ({
    case: "errorResponse",
    value: create(ErrorResponseSchema, { errorCode, errorMessage }),
  });
  const filesAnswer = (file: DescFile | undefined, what: string): Answer =>
    file === undefined
      ? error(Code.NotFound, `${what} not found`)
      : {
          case: "fileDescriptorResponse",
          value: create(FileDescriptorResponseSchema, {
            fileDescriptorProto: withDependencies(file).map((f) => toBinary(FileDescriptorProtoSchema, f.proto)),
          }),
        };

  const answer = (req: ServerReflectionRequest): Answer => {
    const ask = req.messageRequest;
    switch (ask.case) {
      case "listServices":
        return {
          case: "listServicesResponse",
          value: create(ListServiceResponseSchema, {
            service: served.map((s) => create(ServiceResponseSchema, { name: s.typeName })),
          }),
        };
      case "fileByFilename":
        return filesAnswer(files.get(ask.value), `file ${ask.value}`);
      case "fileContainingSymbol": {
        const symbol = ask.value.replace(/^\./, "");
        return filesAnswer(fileOfSymbol.get(symbol), `symbol ${symbol}`);
      }
      case "allExtensionNumbersOfType":
        return {
          case: "allExtensionNumbersResponse",
          value: create(ExtensionNumberResponseSchema, { baseTypeName: ask.value, extensionNumber: [] }),
        };
      default:
        return error(Code.Unimplemented, "unsupported reflection request");
    }
  };

  return {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) {
        yield { validHost: req.host, originalRequest: req, messageResponse: answer(req) };
      }
    },
  };
}
