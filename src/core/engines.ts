/** The three kinds of python-engines server: the config launches them, the bridge calls them, the stack and chaos manage their processes. */
export type EngineRole = 'inference' | 'trainer' | 'env';
