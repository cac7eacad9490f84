// The one error helper: a handler throws ServiceError (usually through fail())
// and the bus layer turns it into the spec's failure response.

export type Json = Record<string, unknown>;

export class ServiceError extends Error {
  constructor(
    public readonly fields: Json,
  ) {
    super(String(fields.errorText ?? fields.errorMessage ?? fields.errorCode ?? "error"));
  }
  /** The failure response: returnValue false plus the error fields. */
  response(): Json {
    return { returnValue: false, ...this.fields };
  }
}

/** Throws the spec error: errorCode (omitted when the spec's code is None) and errorText. */
export function fail(code: number | null | undefined, text: string, extra: Json = {}): never {
  const fields: Json = {};
  if (code !== null && code !== undefined) fields.errorCode = code;
  fields.errorText = text;
  throw new ServiceError({ ...fields, ...extra });
}

/** A spec error row kept as data: `errors.ts` files list these. */
export interface ErrorRow {
  code: number | null;
  text: string;
}

export function raise(row: ErrorRow, extra: Json = {}): never {
  fail(row.code, row.text, extra);
}

/** The success response: returnValue true plus the method's fields (the one response-shape helper). */
export function ok<T extends Json = {}>(fields?: T): { returnValue: true } & T {
  return { returnValue: true, ...(fields as T) };
}
