class Extra
