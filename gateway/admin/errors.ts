// The admin API's one error shape: {"error":{"code","message","details"?}}.
export type AdminErrorCode = 'unauthorized' | 'forbidden' | 'not_found' | 'invalid_request' | 'conflict' | 'read_only' | 'admin_disabled' | 'unsupported_media_type' | 'internal';

export interface AdminErrorDetail {
  location: string;
  message: string;
  value?: unknown;
}

const STATUS: Record<AdminErrorCode, number> = {
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  invalid_request: 400,
  conflict: 409,
  read_only: 405,
  admin_disabled: 503,
  unsupported_media_type: 415,
  internal: 500,
};

export class AdminError extends Error {
  readonly code: AdminErrorCode;
  readonly status: number;
  readonly details?: AdminErrorDetail[];
  constructor(code: AdminErrorCode, message: string, opts: { status?: number; details?: AdminErrorDetail[] } = {}) {
    super(message);
    this.code = code;
    this.status = opts.status ?? STATUS[code];
    this.details = opts.details;
  }

  toJSON(): { error: { code: AdminErrorCode; message: string; details?: AdminErrorDetail[] } } {
    return { error: { code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) } };
  }
}
