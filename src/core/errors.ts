// The one error helper: a handler throws ServiceError (usually through fail(),
// raise() or refuse()) and the bus layer turns it into the spec's failure response;
// answer() writes a spec row as failure fields where a response is built rather than
// thrown (a service's badRequest, denied, internalError). A request that fails its
// schema is described once by the platform (Invalid, src/core/service.ts) and answered
// with the row its method's table declares for it (InvalidRows, rowForInvalid).

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
  throw new ServiceError({ ...answer({ code: code ?? null, text }), ...extra });
}

/** A spec error row kept as data: `errors.ts` files list these. */
export interface ErrorRow {
  code: number | null;
  text: string;
}

export function raise(row: ErrorRow, extra: Json = {}): never {
  fail(row.code, row.text, extra);
}

/** How a service writes a row: another text than the row's, the text's field name (videooutput's errorMessage), fields added. */
export interface AnswerOptions {
  text?: string;
  /** The field the text goes in (default errorText). */
  textField?: string;
  extra?: Json;
}

/** A spec row as failure fields: errorCode (omitted when the spec's code is None) and its text. */
export function answer(row: ErrorRow, opts: AnswerOptions = {}): Json {
  const fields: Json = {};
  if (row.code !== null && row.code !== undefined) fields.errorCode = row.code;
  fields[opts.textField ?? "errorText"] = opts.text ?? row.text;
  return opts.extra ? { ...fields, ...opts.extra } : fields;
}

/** Throws answer(row, opts) as the handler's failure. */
export function refuse(row: ErrorRow, opts: AnswerOptions = {}): never {
  throw new ServiceError(answer(row, opts));
}

/**
 * answer and refuse for a service whose failures carry their text in another field
 * (videooutput: errorMessage); the second argument is the text when it is not the row's.
 */
export function answersIn(textField: string) {
  return {
    answer: (row: ErrorRow, text?: string): Json => answer(row, { text, textField }),
    refuse: (row: ErrorRow, text?: string): never => refuse(row, { text, textField }),
  };
}

/** The success response: returnValue true plus the method's fields (the one response-shape helper). */
export function ok<T extends Json = {}>(fields?: T): { returnValue: true } & T {
  return { returnValue: true, ...(fields as T) };
}

// ---- requests that fail their schema ----------------------------------------------

/**
 * The first value of a request that failed its method's schema, as the platform
 * describes it (made from the validator's issue in one place: src/core/service.ts,
 * describeInvalid). Services choose their row from these fields, never from the
 * validator's text.
 */
export interface Invalid {
  method: string;
  /** Where the value is ([] for the payload itself). */
  path: (string | number)[];
  /** The top-level field it is in ("" for the payload itself). */
  field: string;
  /** The value is absent (the name of the missing field: the last element of path). */
  missing?: string;
  /** A bound the value is past: too big, too small, too long, too short. */
  range: boolean;
  /** One sentence saying what is wrong with the value (no path, no layout). */
  message: string;
}

/** A row, or the row for this value (undefined: the table has none for it). */
export type RowFor = ErrorRow | ((v: Invalid) => ErrorRow | undefined);

/** Rows by what is wrong with the field; `invalid` also covers a missing or out-of-range field without a row of its own. */
export interface RowsByReason {
  /** The top-level field itself is absent. */
  missing?: RowFor;
  /** The value is past a bound of the schema. */
  range?: RowFor;
  invalid?: RowFor;
}

/**
 * Which spec error a request failing the schema gets: by the top-level field that
 * failed first (`fields`), else `default`. A method without a row for the value
 * (none declared, or a function answering undefined) is answered by the service's
 * badRequest.
 */
export interface InvalidRows {
  fields?: Record<string, RowFor | RowsByReason>;
  default?: RowFor | RowsByReason;
}

const isRow = (r: unknown): r is ErrorRow => typeof r === "object" && r !== null && "text" in r;

function pick(r: RowFor | RowsByReason | undefined, v: Invalid): ErrorRow | undefined {
  if (r === undefined) return undefined;
  if (typeof r === "function") return r(v);
  if (isRow(r)) return r;
  const chosen = v.missing !== undefined && v.path.length === 1 ? r.missing : v.range ? r.range : undefined;
  return pick(chosen ?? r.invalid, v);
}

/** The row the tables declare for an invalid value: the method's, then the service's default. */
export function rowForInvalid(v: Invalid, ...tables: (InvalidRows | undefined)[]): ErrorRow | undefined {
  for (const t of tables) {
    if (!t) continue;
    const row = (t.fields && Object.hasOwn(t.fields, v.field) ? pick(t.fields[v.field], v) : undefined) ?? pick(t.default, v);
    if (row) return row;
  }
  return undefined;
}
