/** Typed calls to the trainer server (python-engines --role trainer). */
import {
  ExportWeightsResponseSchema,
  LoadResponseSchema,
  LogprobsResponseSchema,
  ResetResponseSchema,
  SaveResponseSchema,
  TrainerStateSchema,
  TrainStepResponseSchema,
  type ExportWeightsRequest,
  type ExportWeightsResponse,
  type LoadRequest,
  type LoadResponse,
  type LogprobsRequest,
  type LogprobsResponse,
  type ResetResponse,
  type SaveRequest,
  type SaveResponse,
  type TrainerState,
  type ResetRequest,
  type TrainStepRequest,
  type TrainStepResponse,
} from './contracts/trainer';
import { callChecked, type RequestOptions } from './http';

const TRAIN_TIMEOUT_MS = 60 * 60_000;

export class TrainerClient {
  constructor(readonly baseUrl: string) {}

  /** Back to the initial weights and version 0, held by `run_id`: a new run starts here. */
  reset(req: ResetRequest = {}, opts: RequestOptions = {}): Promise<ResetResponse> {
    return callChecked(this.baseUrl, '/reset', ResetResponseSchema, { timeoutMs: 10 * 60_000, ...opts, body: req });
  }

  /** Which run the trainer holds (none after a restart) and its version. */
  status(opts: RequestOptions = {}): Promise<TrainerState> {
    return callChecked(this.baseUrl, '/status', TrainerStateSchema, { timeoutMs: 30_000, ...opts });
  }

  /** Idempotent by step: repeating the last step returns its recorded response (replayed: true) instead of training twice. */
  trainStep(req: TrainStepRequest, opts: RequestOptions = {}): Promise<TrainStepResponse> {
    return callChecked(this.baseUrl, '/train_step', TrainStepResponseSchema, { timeoutMs: TRAIN_TIMEOUT_MS, ...opts, body: req });
  }

  logprobs(req: LogprobsRequest, opts: RequestOptions = {}): Promise<LogprobsResponse> {
    return callChecked(this.baseUrl, '/logprobs', LogprobsResponseSchema, { timeoutMs: TRAIN_TIMEOUT_MS, ...opts, body: req });
  }

  exportWeights(req: ExportWeightsRequest, opts: RequestOptions = {}): Promise<ExportWeightsResponse> {
    return callChecked(this.baseUrl, '/export_weights', ExportWeightsResponseSchema, { timeoutMs: 10 * 60_000, ...opts, body: req });
  }

  save(req: SaveRequest, opts: RequestOptions = {}): Promise<SaveResponse> {
    return callChecked(this.baseUrl, '/save', SaveResponseSchema, { timeoutMs: 10 * 60_000, ...opts, body: req });
  }

  load(req: LoadRequest, opts: RequestOptions = {}): Promise<LoadResponse> {
    return callChecked(this.baseUrl, '/load', LoadResponseSchema, { timeoutMs: 10 * 60_000, ...opts, body: req });
  }
}
