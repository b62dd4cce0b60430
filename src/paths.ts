/** Where rollflow keeps its files. The project root is found from this file's own location (src/ or dist/). */
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '..');
export const stateDir = () => path.resolve(process.env.ROLLFLOW_STATE ?? path.join(ROOT, '.state'));
export const logsDir = (state = stateDir()) => path.join(state, 'logs');
export const pidsDir = (state = stateDir()) => path.join(state, 'pids');
export const pythonBin = () => process.env.ROLLFLOW_PYTHON ?? path.join(ROOT, '.venv', 'bin', 'python');
export const devServerScript = path.join(ROOT, 'temporal', 'dev-server.sh');
export const cliEntry = path.join(ROOT, 'dist', 'cli', 'index.js');
/** The environment python-engines runs in: its package on the path. */
export const pythonEnginesEnv = (): NodeJS.ProcessEnv => ({ ...process.env, PYTHONPATH: path.join(ROOT, 'python-engines') });
