/**
 * gRPC-web framing over HTTP/1.1: request bodies in `application/grpc-web-text` (base64) or
 * `application/grpc-web+proto` (binary), responses as one data frame and one trailer frame.
 *
 * @module
 */

/** The two grpc-web content types the SDK may send. */
export type GrpcWebFormat = 'text' | 'binary'

/** Which format a request uses, from its content type (undefined: not grpc-web). */
export function formatOf(contentType: string | undefined): GrpcWebFormat | undefined {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase()
  if (type === 'application/grpc-web-text' || type === 'application/grpc-web-text+proto')
    return 'text'
  if (type === 'application/grpc-web' || type === 'application/grpc-web+proto') return 'binary'
  return undefined
}

/** The content type to answer with. */
export function contentTypeOf(format: GrpcWebFormat): string {
  return format === 'text' ? 'application/grpc-web-text' : 'application/grpc-web+proto'
}

/**
 * The protobuf message of a unary request body (the first data frame).
 * Returns undefined when the body is not one well-formed data frame.
 */
export function decodeRequest(body: Buffer, format: GrpcWebFormat): Uint8Array | undefined {
  const bytes =
    format === 'text' ? Buffer.from(body.toString('latin1').replace(/\s+/g, ''), 'base64') : body
  if (bytes.length < 5 || bytes[0] !== 0x00) return undefined
  const length = bytes.readUInt32BE(1)
  if (bytes.length < 5 + length) return undefined
  return new Uint8Array(bytes.buffer, bytes.byteOffset + 5, length)
}

function frame(flag: number, payload: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + payload.length)
  out[0] = flag
  out.writeUInt32BE(payload.length, 1)
  out.set(payload, 5)
  return out
}

/** A successful response body: data frame + trailer frame with `grpc-status: 0`. */
export function encodeResponse(message: Uint8Array, format: GrpcWebFormat): Buffer {
  const body = Buffer.concat([
    frame(0x00, message),
    frame(0x80, Buffer.from('grpc-status:0\r\ngrpc-message:\r\n')),
  ])
  return format === 'text' ? Buffer.from(body.toString('base64')) : body
}

/** `grpc-message` is percent-encoded on the wire. */
export function encodeStatusMessage(message: string): string {
  return encodeURIComponent(message.slice(0, 2000))
}
