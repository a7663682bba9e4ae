"""Pure scoring code: metrics and benchmark kinds. No Django import anywhere below."""
